package vault

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/identity"
)

// Limits of the cryptographic operations.
const (
	MaxBatchItems   = 1000
	MaxInputBytes   = 64 << 10 // plaintext or input, decoded
	MaxAADBytes     = 8 << 10
	MaxReference    = 256 // characters
	MaxCryptoBody   = 4 << 20
	MaxRandomBytes  = 65536
	maxEnvelopeText = 128 << 10 // a ciphertext, signature or JWS field
)

// Crypto operations as Service.Crypto takes them: the route names, with
// datakey's two forms apart.
const (
	CryptoEncrypt          = OpEncrypt
	CryptoDecrypt          = OpDecrypt
	CryptoRewrap           = OpRewrap
	CryptoDatakeyWrapped   = "datakey/wrapped"
	CryptoDatakeyPlaintext = "datakey/plaintext"
	CryptoHMAC             = OpHMAC
	CryptoSign             = OpSign
	CryptoVerify           = OpVerify
	CryptoEncapsulate      = OpEncapsulate
	CryptoDecapsulate      = OpDecapsulate
)

// Input is one item of a cryptographic request: the single form's body or
// one element of its batch_input. Binary fields are base64 (standard or
// URL-safe); ciphertexts, signatures and HMACs are `lk:v{n}:` values.
// Operation bodies use Vault transit's snake_case names.
type Input struct {
	Plaintext                 *string        `json:"plaintext"`
	AssociatedData            *string        `json:"associated_data"`
	KeyVersion                *int           `json:"key_version"`
	Ciphertext                *string        `json:"ciphertext"`
	DestinationKey            string         `json:"destination_key"`
	DestinationAssociatedData *string        `json:"destination_associated_data"`
	Bits                      int            `json:"bits"`
	Input                     *string        `json:"input"`
	HashAlgorithm             string         `json:"hash_algorithm"`
	Prehashed                 bool           `json:"prehashed"`
	SignatureAlgorithm        string         `json:"signature_algorithm"`
	MarshalingAlgorithm       string         `json:"marshaling_algorithm"`
	Context                   *string        `json:"context"`
	Output                    string         `json:"output"`
	JWSHeader                 map[string]any `json:"jws_header"`
	Signature                 *string        `json:"signature"`
	HMAC                      *string        `json:"hmac"`
	JWS                       *string        `json:"jws"`
	Reference                 string         `json:"reference"`
}

// Body is a cryptographic request's body: the single form (Input), or
// batch_input, whose items are decoded one by one so that a malformed
// item fails alone.
type Body struct {
	Input
	BatchInput []json.RawMessage `json:"batch_input"`
	// items are the batch's items when DecodeBatch decoded them at once.
	items []Input
}

// DecodeBatch decodes a batch body in one pass, the items straight into
// Inputs, and reports whether it did. It does only when the body decodes
// without error and has batch_input: a body with a malformed item is left
// to the ordinary decoding into Body, whose BatchInput keeps each item
// raw so that it fails alone. A batch's items then cost one scan of the
// JSON and one decode, not four scans and a decode.
func (b *Body) DecodeBatch(data []byte) bool {
	var f struct {
		Input
		BatchInput []Input `json:"batch_input"`
	}
	if json.Unmarshal(data, &f) != nil || f.BatchInput == nil {
		return false
	}
	b.Input, b.BatchInput, b.items = f.Input, nil, f.BatchInput
	return true
}

// Result is the answer for one item: the operation's fields, or Err.
type Result struct {
	Ciphertext    string  `json:"ciphertext,omitempty"`
	Plaintext     *string `json:"plaintext,omitempty"`
	Signature     string  `json:"signature,omitempty"`
	JWS           string  `json:"jws,omitempty"`
	HMAC          string  `json:"hmac,omitempty"`
	Valid         *bool   `json:"valid,omitempty"`
	Reason        string  `json:"reason,omitempty"`
	SharedSecret  string  `json:"shared_secret,omitempty"`
	KeyVersion    int     `json:"key_version"`
	SourceVersion *int    `json:"source_version,omitempty"`
	Reference     string  `json:"reference,omitempty"`
	// Err is the item's failure (fault.Invalid, Conflict or TooLarge);
	// the other fields are then empty.
	Err error `json:"-"`
}

// Outcome is a cryptographic request's answer.
type Outcome struct {
	Batch   bool
	Results []Result // one, or one per batch item in input order
	Failed  int
}

// cryptoOp describes an operation: its scope, usage bit, state-table row,
// grant and audit name, and which keys can do it.
type cryptoOp struct {
	name  string // grant and audit name
	scope string
	state string
	// needs returns the usage bit k needs, and whether k's type can do
	// the operation at all.
	needs func(k Key) (UsageMask, bool)
}

func encrypting(k Key) bool {
	switch k.Algorithm {
	case AlgorithmAES, AlgorithmChaCha20, AlgorithmRSA, AlgorithmMLKEM, AlgorithmXWing:
		return true
	}
	return false
}

func signing(k Key) bool {
	switch k.Algorithm {
	case AlgorithmRSA, AlgorithmEC, AlgorithmEd25519, AlgorithmMLDSA:
		return true
	}
	return false
}

func kem(k Key) bool { return k.Algorithm == AlgorithmMLKEM || k.Algorithm == AlgorithmXWing }

var cryptoOps = map[string]cryptoOp{
	CryptoEncrypt: {OpEncrypt, ScopeEncrypt, OpEncrypt, func(k Key) (UsageMask, bool) { return UsageEncrypt, encrypting(k) }},
	CryptoDecrypt: {OpDecrypt, ScopeDecrypt, OpDecrypt, func(k Key) (UsageMask, bool) { return UsageDecrypt, encrypting(k) && !k.PublicOnly() }},
	CryptoRewrap:  {OpRewrap, ScopeDecrypt, OpRewrap, func(k Key) (UsageMask, bool) { return UsageDecrypt, encrypting(k) && !k.PublicOnly() }},
	CryptoDatakeyWrapped: {OpDatakey, ScopeEncrypt, OpDatakey, func(k Key) (UsageMask, bool) {
		return UsageEncrypt, encrypting(k) && !k.PublicOnly()
	}},
	CryptoDatakeyPlaintext: {OpDatakey, ScopeDatakey, OpDatakey, func(k Key) (UsageMask, bool) {
		return UsageEncrypt, encrypting(k) && !k.PublicOnly()
	}},
	CryptoHMAC: {OpHMAC, ScopeSign, OpHMAC, func(k Key) (UsageMask, bool) { return UsageMACGenerate, k.Algorithm == AlgorithmHMAC }},
	CryptoSign: {OpSign, ScopeSign, OpSign, func(k Key) (UsageMask, bool) { return UsageSign, signing(k) && !k.PublicOnly() }},
	CryptoVerify: {OpVerify, ScopeVerify, OpVerify, func(k Key) (UsageMask, bool) {
		if k.Algorithm == AlgorithmHMAC {
			return UsageMACVerify, true
		}
		return UsageVerify, signing(k)
	}},
	CryptoEncapsulate: {OpEncapsulate, ScopeEncrypt, OpEncapsulate, func(k Key) (UsageMask, bool) { return UsageKeyAgreement, kem(k) }},
	CryptoDecapsulate: {OpDecapsulate, ScopeDecrypt, OpDecapsulate, func(k Key) (UsageMask, bool) {
		return UsageKeyAgreement, kem(k) && !k.PublicOnly()
	}},
}

// usable settles, from the key alone, whether it may do op for p: its type
// (400), its usage mask (403), its grants (403) and its state (409).
func usable(k Key, p identity.Principal, op cryptoOp) error {
	bit, can := op.needs(k)
	if !can {
		what := k.Algorithm
		if k.PublicOnly() {
			what = "a public-only " + k.Algorithm
		}
		return fault.E(fault.Invalid, fmt.Sprintf("%s key cannot %s", article(what), op.name))
	}
	if k.UsageMask&bit == 0 {
		return fault.E(fault.Forbidden, fmt.Sprintf("the key's usageMask (%d) does not allow %s", k.UsageMask, op.name))
	}
	if err := granted(k, p, op.name); err != nil {
		return err
	}
	return checkState(k, op.state)
}

func article(s string) string {
	if s != "" && slices.Contains([]byte("AEIOU"), s[0]) {
		return "an " + s
	}
	return "a " + s
}

// run is one cryptographic request being answered.
type run struct {
	s        *Service
	p        identity.Principal
	k        Key
	op       string
	tenant   [16]byte
	keyID    [16]byte
	versions map[int]int // version -> items, for the audit
	bytesIn  int
	bytesOut int
	hashAlg  string
	// dests are rewrap's destination keys by the name or id items give.
	dests map[string]Key
}

// Crypto answers a cryptographic operation op (Crypto*) on the key r names,
// for p. Scope, key, type, usage, grant and state are settled before the
// body is read (read fills it in; its failure fails the request): a
// request refused for them costs no body. Each item is answered on its
// own; a request fails as a whole only for a bad credential, key, state,
// usage, count or body (and a single item's failure, without batch_input).
// Every request, refused or not, writes one audit record, which never holds
// plaintext, ciphertext, associated data, signatures, references or keys.
func (s *Service) Crypto(ctx context.Context, p identity.Principal, op string, r KeyRef, read func(*Body) error) (Outcome, error) {
	spec, ok := cryptoOps[op]
	if !ok {
		return Outcome{}, fault.E(fault.Invalid, "unknown operation "+op)
	}
	action := ActionCrypto + spec.name
	meta := withClient(map[string]any{"key": refMeta(r)}, p)
	if op == CryptoDatakeyPlaintext || op == CryptoDatakeyWrapped {
		meta["variant"] = op[len("datakey/"):]
	}
	if err := s.check(ctx, p, spec.scope, "", action, meta); err != nil {
		return Outcome{}, err
	}
	k, err := s.load(ctx, p.TenantID, r)
	if fault.Is(fault.NotFound, err) {
		if sk, serr := s.signingKeyFor(ctx, p, r); serr == nil {
			meta["key"], err = keyMeta(sk), errPlatformKey("used through the vault's operations")
		}
	}
	if err == nil {
		meta["key"] = keyMeta(k)
		err = usable(k, p, spec)
	}
	if err != nil {
		return Outcome{}, s.record(ctx, p.TenantID, action, err, meta)
	}
	if k.State == StateCompromised {
		meta["compromised"] = true
	}
	var body Body
	if err := read(&body); err != nil {
		return Outcome{}, s.record(ctx, p.TenantID, action, err, meta)
	}
	ru := &run{s: s, p: p, k: k, op: op, versions: map[int]int{}}
	ru.tenant, _ = guidBytes(k.TenantID)
	ru.keyID, _ = guidBytes(k.ID)
	out, err := ru.answer(ctx, &body)
	meta["items"], meta["failed"] = len(out.Results), out.Failed
	meta["bytesIn"], meta["bytesOut"] = ru.bytesIn, ru.bytesOut
	if len(ru.versions) > 0 {
		vs := map[string]int{}
		for v, n := range ru.versions {
			vs[strconv.Itoa(v)] = n
		}
		meta["versions"] = vs
	}
	if ru.hashAlg != "" {
		meta["hash_algorithm"] = ru.hashAlg
	}
	if len(ru.dests) > 0 {
		var ds []map[string]any
		for _, d := range ru.dests {
			ds = append(ds, keyMeta(d))
		}
		meta["destinations"] = ds
	}
	if err == nil && !out.Batch && out.Results[0].Err != nil {
		err = out.Results[0].Err
	}
	if err != nil {
		return Outcome{}, s.record(ctx, p.TenantID, action, err, meta)
	}
	return out, s.record(ctx, p.TenantID, action, nil, meta)
}

// answer decodes the items and answers each.
func (ru *run) answer(ctx context.Context, body *Body) (Outcome, error) {
	if body.BatchInput == nil && body.items == nil {
		if err := ru.prepare(ctx, []*Input{&body.Input}); err != nil {
			return Outcome{}, err
		}
		res := ru.item(ctx, &body.Input)
		res.Reference = ""
		return Outcome{Results: []Result{res}}, nil
	}
	n := len(body.BatchInput)
	if body.items != nil {
		n = len(body.items)
	}
	switch {
	case n == 0:
		return Outcome{Batch: true}, fault.E(fault.Invalid, fault.Field("batch_input"), "batch_input is empty")
	case n > MaxBatchItems:
		return Outcome{Batch: true}, fault.E(fault.Invalid, fault.Field("batch_input"), fmt.Sprintf("batch_input has %d items; at most %d", n, MaxBatchItems))
	}
	inputs := make([]*Input, n)
	decodeErr := make([]error, n)
	for i := range body.items {
		inputs[i] = &body.items[i]
	}
	for i, raw := range body.BatchInput {
		in := &Input{}
		if err := decodeItem(raw, in); err != nil {
			decodeErr[i] = err
		}
		inputs[i] = in
	}
	if err := ru.prepare(ctx, inputs); err != nil {
		return Outcome{Batch: true}, err
	}
	out := Outcome{Batch: true, Results: make([]Result, n)}
	for i, in := range inputs {
		if decodeErr[i] != nil {
			out.Results[i] = Result{Err: decodeErr[i], Reference: in.Reference}
		} else {
			out.Results[i] = ru.item(ctx, in)
		}
		if out.Results[i].Err != nil {
			out.Failed++
		}
	}
	return out, nil
}

// decodeItem reads one batch item; a malformed one fails alone (400).
func decodeItem(raw json.RawMessage, in *Input) error {
	if err := json.Unmarshal(raw, in); err != nil {
		// Keep the reference of an item whose other fields are wrong.
		var ref struct {
			Reference string `json:"reference"`
		}
		if json.Unmarshal(raw, &ref) == nil {
			in.Reference = ref.Reference
		}
		if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
			return fault.E(fault.Invalid, fault.Field(te.Field), "field "+te.Field+" has the wrong type", err)
		}
		return fault.E(fault.Invalid, "the batch item is not a JSON object of the operation's fields", err)
	}
	return nil
}

// prepare does the request-level work the items share: rewrap's
// destination keys, resolved and checked once (a bad one fails the
// request, as a bad key does).
func (ru *run) prepare(ctx context.Context, inputs []*Input) error {
	if ru.op != CryptoRewrap {
		return nil
	}
	ru.dests = map[string]Key{}
	dest := cryptoOps[CryptoEncrypt]
	dest.name = OpRewrap
	for _, in := range inputs {
		name := in.DestinationKey
		if _, done := ru.dests[name]; done {
			continue
		}
		d := ru.k
		if name != "" {
			if err := authorize(ru.p, ScopeEncrypt, ""); err != nil {
				return err
			}
			var err error
			if d, err = ru.s.load(ctx, ru.p.TenantID, KeyRef{Key: name}); err != nil {
				return fault.E(fault.NotFound, fault.Field("destination_key"), "destination_key: vault key not found", err)
			}
		} else if err := authorize(ru.p, ScopeEncrypt, ""); err != nil {
			return err
		}
		if err := usable(d, ru.p, dest); err != nil {
			return fault.E(fault.Field("destination_key"), fault.Msg("destination_key: "+fault.MessageOf(err)), err)
		}
		ru.dests[name] = d
	}
	return nil
}

// item answers one item.
func (ru *run) item(ctx context.Context, in *Input) Result {
	if len(in.Reference) > MaxReference {
		return Result{Err: fault.E(fault.TooLarge, fault.Field("reference"), fmt.Sprintf("reference is longer than %d characters", MaxReference))}
	}
	var (
		res Result
		err error
	)
	switch ru.op {
	case CryptoEncrypt:
		res, err = ru.encrypt(ctx, in)
	case CryptoDecrypt:
		res, err = ru.decrypt(ctx, in)
	case CryptoRewrap:
		res, err = ru.rewrap(ctx, in)
	case CryptoDatakeyWrapped, CryptoDatakeyPlaintext:
		res, err = ru.datakey(ctx, in)
	case CryptoHMAC:
		res, err = ru.hmac(ctx, in)
	case CryptoSign:
		res, err = ru.sign(ctx, in)
	case CryptoVerify:
		res, err = ru.verify(ctx, in)
	case CryptoEncapsulate:
		res, err = ru.encapsulate(ctx, in)
	case CryptoDecapsulate:
		res, err = ru.decapsulate(ctx, in)
	}
	if err != nil {
		return Result{Err: err, Reference: in.Reference}
	}
	res.Reference = in.Reference
	return res
}

// binary decodes a required binary field, at most limit bytes.
func binaryField(s *string, field string, limit int, required bool) ([]byte, error) {
	if s == nil {
		if required {
			return nil, fault.E(fault.Invalid, fault.Field(field), field+" is required")
		}
		return nil, nil
	}
	if len(*s) > base64.StdEncoding.EncodedLen(limit)+4 {
		return nil, tooLarge(field, limit)
	}
	b, err := decodeBinary(*s, field)
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, tooLarge(field, limit)
	}
	return b, nil
}

func tooLarge(field string, limit int) error {
	return fault.E(fault.TooLarge, fault.Field(field), fmt.Sprintf("%s is over %d bytes", field, limit))
}

// text reads a required `lk:v` field.
func text(s *string, field string) (string, error) {
	switch {
	case s == nil || *s == "":
		return "", fault.E(fault.Invalid, fault.Field(field), field+" is required")
	case len(*s) > maxEnvelopeText:
		return "", fault.E(fault.TooLarge, fault.Field(field), fmt.Sprintf("%s is over %d characters", field, maxEnvelopeText))
	}
	return *s, nil
}

func b64(b []byte) *string {
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

// encryptVersion is the version an encrypt-side operation uses: pinned
// (from the effective minimum for encryption up to the key's version), or
// the key's version.
func encryptVersion(k Key, pinned *int) (int, error) {
	if pinned == nil {
		return k.Version, nil
	}
	v := *pinned
	switch {
	case v > k.Version:
		return 0, fault.E(fault.Invalid, fault.Field("key_version"), fmt.Sprintf("key_version %d is above the key's version %d", v, k.Version))
	case v < k.minEncryption():
		return 0, fault.E(fault.Invalid, fault.Field("key_version"), fmt.Sprintf("key_version %d is below the key's minimum for encryption %d", v, k.minEncryption()))
	}
	return v, nil
}

// decryptVersion checks a version named by a ciphertext, signature or
// HMAC: above latestVersion 400; trimmed or below minDecryptionVersion 409.
func decryptVersion(k Key, v int) error {
	switch {
	case v > k.LatestVersion:
		return fault.E(fault.Invalid, fmt.Sprintf("the value names version %d; the key's latest is %d", v, k.LatestVersion))
	case v < k.MinAvailableVersion:
		return fault.E(fault.Conflict, fmt.Sprintf("version %d of the key is trimmed (destroyed)", v))
	case v < k.MinDecryptionVersion:
		return fault.E(fault.Conflict, fmt.Sprintf("version %d is below the key's minDecryptionVersion %d", v, k.MinDecryptionVersion))
	}
	return nil
}

// open returns version v of key k opened.
func (ru *run) open(ctx context.Context, k Key, v int) (*opened, error) {
	return ru.s.cache.opened(ctx, ru.s, k, v)
}

// noField refuses a field the key type does not take.
func noField(set bool, field, alg string) error {
	if set {
		return fault.E(fault.Invalid, fault.Field(field), fmt.Sprintf("%s keys do not take %s", alg, field))
	}
	return nil
}

func (ru *run) encrypt(ctx context.Context, in *Input) (Result, error) {
	pt, err := binaryField(in.Plaintext, "plaintext", MaxInputBytes, true)
	if err != nil {
		return Result{}, err
	}
	ad, err := binaryField(in.AssociatedData, "associated_data", MaxAADBytes, false)
	if err != nil {
		return Result{}, err
	}
	v, err := encryptVersion(ru.k, in.KeyVersion)
	if err != nil {
		return Result{}, err
	}
	ct, err := ru.seal(ctx, ru.k, v, pt, ad)
	if err != nil {
		return Result{}, err
	}
	ru.bytesIn += len(pt)
	ru.bytesOut += len(ct)
	return Result{Ciphertext: ct, KeyVersion: v}, nil
}

// seal encrypts pt under version v of k (see sealWith) and counts it.
func (ru *run) seal(ctx context.Context, k Key, v int, pt, ad []byte) (string, error) {
	o, err := ru.open(ctx, k, v)
	if err != nil {
		return "", err
	}
	tenant, _ := guidBytes(k.TenantID)
	id, _ := guidBytes(k.ID)
	ct, err := sealWith(o, tenant, id, v, pt, ad)
	if err != nil {
		return "", err
	}
	if k.ID == ru.k.ID {
		ru.versions[v]++
	}
	return ct, nil
}

func (ru *run) decrypt(ctx context.Context, in *Input) (Result, error) {
	pt, v, err := ru.unseal(ctx, in)
	if err != nil {
		return Result{}, err
	}
	ru.bytesOut += len(pt)
	return Result{Plaintext: b64(pt), KeyVersion: v}, nil
}

// unseal decrypts an item's ciphertext with the request's key.
func (ru *run) unseal(ctx context.Context, in *Input) ([]byte, int, error) {
	s, err := text(in.Ciphertext, "ciphertext")
	if err != nil {
		return nil, 0, err
	}
	ad, err := binaryField(in.AssociatedData, "associated_data", MaxAADBytes, false)
	if err != nil {
		return nil, 0, err
	}
	e, err := parseEnvelope(s, "ciphertext")
	if err != nil {
		return nil, 0, err
	}
	ru.bytesIn += len(e.payload)
	if e.keyID != ru.keyID {
		return nil, 0, errAnotherKey
	}
	if err := decryptVersion(ru.k, e.version); err != nil {
		return nil, 0, err
	}
	o, err := ru.open(ctx, ru.k, e.version)
	if err != nil {
		return nil, 0, err
	}
	pt, err := openWith(o, ru.tenant, ru.keyID, e, ad)
	if err != nil {
		return nil, 0, err
	}
	ru.versions[e.version]++
	return pt, e.version, nil
}

// errAnotherKey refuses a value made with another key (or in another
// tenant, whether or not that key exists).
var errAnotherKey = fault.E(fault.Invalid, fault.Field("ciphertext"), "the ciphertext was made with another key")

func (ru *run) rewrap(ctx context.Context, in *Input) (Result, error) {
	pt, src, err := ru.unseal(ctx, in)
	if err != nil {
		return Result{}, err
	}
	defer clear(pt)
	dest := ru.dests[in.DestinationKey]
	ad, err := binaryField(in.AssociatedData, "associated_data", MaxAADBytes, false)
	if err != nil {
		return Result{}, err
	}
	if in.DestinationAssociatedData != nil {
		if ad, err = binaryField(in.DestinationAssociatedData, "destination_associated_data", MaxAADBytes, false); err != nil {
			return Result{}, err
		}
	}
	ct, err := ru.seal(ctx, dest, dest.Version, pt, ad)
	if err != nil {
		return Result{}, err
	}
	ru.bytesOut += len(ct)
	return Result{Ciphertext: ct, KeyVersion: dest.Version, SourceVersion: &src}, nil
}

func (ru *run) datakey(ctx context.Context, in *Input) (Result, error) {
	bits := in.Bits
	if bits == 0 {
		bits = 256
	}
	if bits != 128 && bits != 256 && bits != 512 {
		return Result{}, fault.E(fault.Invalid, fault.Field("bits"), "bits is 128, 256 or 512")
	}
	ad, err := binaryField(in.AssociatedData, "associated_data", MaxAADBytes, false)
	if err != nil {
		return Result{}, err
	}
	v, err := encryptVersion(ru.k, in.KeyVersion)
	if err != nil {
		return Result{}, err
	}
	key := make([]byte, bits/8)
	rand.Read(key)
	defer clear(key)
	ct, err := ru.seal(ctx, ru.k, v, key, ad)
	if err != nil {
		return Result{}, err
	}
	res := Result{Ciphertext: ct, KeyVersion: v}
	if ru.op == CryptoDatakeyPlaintext {
		res.Plaintext = b64(key)
		ru.bytesOut += len(key)
	}
	ru.bytesOut += len(ct)
	return res, nil
}

func (ru *run) encapsulate(ctx context.Context, in *Input) (Result, error) {
	v, err := encryptVersion(ru.k, in.KeyVersion)
	if err != nil {
		return Result{}, err
	}
	o, err := ru.open(ctx, ru.k, v)
	if err != nil {
		return Result{}, err
	}
	ct, ss, err := encapsulateWith(o, ru.tenant, ru.keyID, v)
	if err != nil {
		return Result{}, err
	}
	ru.versions[v]++
	ru.bytesOut += len(ss)
	return Result{Ciphertext: ct, SharedSecret: base64.StdEncoding.EncodeToString(ss), KeyVersion: v}, nil
}

func (ru *run) decapsulate(ctx context.Context, in *Input) (Result, error) {
	s, err := text(in.Ciphertext, "ciphertext")
	if err != nil {
		return Result{}, err
	}
	e, err := parseEnvelope(s, "ciphertext")
	if err != nil {
		return Result{}, err
	}
	if e.keyID != ru.keyID {
		return Result{}, errAnotherKey
	}
	if err := decryptVersion(ru.k, e.version); err != nil {
		return Result{}, err
	}
	o, err := ru.open(ctx, ru.k, e.version)
	if err != nil {
		return Result{}, err
	}
	ss, err := decapsulateWith(o, ru.tenant, ru.keyID, e)
	if err != nil {
		return Result{}, err
	}
	ru.versions[e.version]++
	ru.bytesIn += len(e.payload)
	ru.bytesOut += len(ss)
	return Result{SharedSecret: base64.StdEncoding.EncodeToString(ss), KeyVersion: e.version}, nil
}

// Random returns n (1 to 65536) random bytes in format base64 (default)
// or hex: POST {base_url}/vault/random, for any vault:crypto:* scope.
func (s *Service) Random(ctx context.Context, p identity.Principal, n int, format string) (string, error) {
	const action = ActionCrypto + "random"
	meta := withClient(map[string]any{"bytesOut": n}, p)
	if err := authorizeAnyCrypto(p); err != nil {
		if p.TenantID == "" {
			return "", err
		}
		return "", s.record(ctx, p.TenantID, action, err, meta)
	}
	var err error
	switch {
	case n < 1 || n > MaxRandomBytes:
		err = fault.E(fault.Invalid, fault.Field("bytes"), fmt.Sprintf("bytes is 1 to %d", MaxRandomBytes))
	case format != "" && format != "base64" && format != "hex":
		err = fault.E(fault.Invalid, fault.Field("format"), `format is "base64" or "hex"`)
	}
	if err != nil {
		return "", s.record(ctx, p.TenantID, action, err, meta)
	}
	b := make([]byte, n)
	rand.Read(b)
	out := base64.StdEncoding.EncodeToString(b)
	if format == "hex" {
		out = hex.EncodeToString(b)
	}
	return out, s.record(ctx, p.TenantID, action, nil, meta)
}
