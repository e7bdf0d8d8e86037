package vault

import (
	"bytes"
	"compress/gzip"
	"crypto/mlkem/mlkemtest"
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// The post-quantum keys are checked against independent vectors, through
// the vault's own code paths (seeds as stored, SubjectPublicKeyInfo as
// published, the envelope's operations):
//
//   - testdata/acvp_pq.json.gz: NIST ACVP-Server vectors as
//     cloudflare/circl v1.6.5 ships them (sign/mldsa/testdata,
//     kem/mlkem/testdata), the first five cases of each parameter set:
//     ML-DSA keyGen (seed -> pk), ML-KEM keyGen (d, z -> ek) and
//     encapsulation (ek, m -> c, K).
//   - testdata/wycheproof_pq.json.gz: C2SP/wycheproof testvectors_v1
//     (Apache 2.0), a subset: ML-KEM decapsulation from seeds
//     (mlkem_{768,1024}_test.json) and ML-DSA verification with the public
//     key's DER (mldsa_{44,65,87}_verify_test.json).

func readGzipJSON(t *testing.T, name string, v any) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(zr).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// paramSpec reads "ML-DSA-65" or "ML-KEM-768".
func paramSpec(t *testing.T, name string) KeySpec {
	t.Helper()
	s, err := KeySpec{Algorithm: name}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestACVPVectors(t *testing.T) {
	var v struct {
		MLDSAKeyGen []struct{ ParameterSet, Seed, Pk string }
		MLKEMKeyGen []struct{ ParameterSet, D, Z, Ek string }
		MLKEMEncap  []struct{ ParameterSet, Ek, M, C, K string }
	}
	readGzipJSON(t, "testdata/acvp_pq.json.gz", &v)
	if len(v.MLDSAKeyGen) != 15 || len(v.MLKEMKeyGen) != 10 || len(v.MLKEMEncap) != 10 {
		t.Fatalf("vectors: %d %d %d", len(v.MLDSAKeyGen), len(v.MLKEMKeyGen), len(v.MLKEMEncap))
	}
	for i, tc := range v.MLDSAKeyGen {
		t.Run("ML-DSA keyGen "+strconv.Itoa(i), func(t *testing.T) {
			spec := paramSpec(t, tc.ParameterSet)
			o, err := openRaw(spec, unhex(t, tc.Seed))
			if err != nil {
				t.Fatal(err)
			}
			if got := o.dsaPub.Bytes(); !bytes.Equal(got, unhex(t, tc.Pk)) {
				t.Fatalf("public key from the seed differs")
			}
		})
	}
	for i, tc := range v.MLKEMKeyGen {
		t.Run("ML-KEM keyGen "+strconv.Itoa(i), func(t *testing.T) {
			spec := paramSpec(t, tc.ParameterSet)
			o, err := openRaw(spec, append(unhex(t, tc.D), unhex(t, tc.Z)...))
			if err != nil {
				t.Fatal(err)
			}
			var ek []byte
			if o.ek768 != nil {
				ek = o.ek768.Bytes()
			} else {
				ek = o.ek1024.Bytes()
			}
			if !bytes.Equal(ek, unhex(t, tc.Ek)) {
				t.Fatal("encapsulation key from the seed differs")
			}
		})
	}
	for i, tc := range v.MLKEMEncap {
		t.Run("ML-KEM encapsulation "+strconv.Itoa(i), func(t *testing.T) {
			spec := paramSpec(t, tc.ParameterSet)
			// The public half as the vault publishes it, read back.
			o, err := openPublic(spec, pqSPKI(spec, unhex(t, tc.Ek)))
			if err != nil {
				t.Fatal(err)
			}
			var k, c []byte
			if o.ek768 != nil {
				k, c, err = mlkemtest.Encapsulate768(o.ek768, unhex(t, tc.M))
			} else {
				k, c, err = mlkemtest.Encapsulate1024(o.ek1024, unhex(t, tc.M))
			}
			if err != nil || !bytes.Equal(k, unhex(t, tc.K)) || !bytes.Equal(c, unhex(t, tc.C)) {
				t.Fatalf("encapsulation differs: %v", err)
			}
		})
	}
}

func TestWycheproofVectors(t *testing.T) {
	var v struct {
		MLKEM []struct {
			TcID                                  int
			ParameterSet, Comment, Seed, Ek, C, K string
			Result                                string
		}
		MLDSAVerify []struct {
			ParameterSet, PublicKey, PublicKeyDer string
			Tests                                 []struct {
				TcID                      int
				Comment, Msg, Sig, Result string
				Ctx                       *string
			}
		}
	}
	readGzipJSON(t, "testdata/wycheproof_pq.json.gz", &v)
	ran := 0
	for _, tc := range v.MLKEM {
		ran++
		t.Run("ML-KEM "+strconv.Itoa(tc.TcID), func(t *testing.T) {
			spec := paramSpec(t, tc.ParameterSet)
			o, err := openRaw(spec, unhex(t, tc.Seed))
			if tc.Result != "valid" && err != nil {
				return // a malformed private key is refused
			}
			if err != nil {
				t.Fatal(err)
			}
			ek := o.kemPub.Bytes()
			if tc.Ek != "" && !bytes.Equal(ek, unhex(t, tc.Ek)) {
				t.Fatal("encapsulation key from the seed differs")
			}
			k, err := decapsulateWith(o, tenantA, keyA, envelope{format: formatKEM, payload: unhex(t, tc.C)})
			switch {
			case tc.Result == "valid" && (err != nil || !bytes.Equal(k, unhex(t, tc.K))):
				t.Fatalf("%s: decapsulation = %x, %v", tc.Comment, k, err)
			case tc.Result != "valid" && err == nil:
				t.Fatalf("%s: invalid vector decapsulated", tc.Comment)
			}
		})
	}
	for _, g := range v.MLDSAVerify {
		spec := paramSpec(t, g.ParameterSet)
		for _, tc := range g.Tests {
			ran++
			t.Run(g.ParameterSet+" verify "+strconv.Itoa(tc.TcID), func(t *testing.T) {
				// Our SubjectPublicKeyInfo of the raw key is Wycheproof's DER.
				if pk := unhex(t, g.PublicKey); len(pk) == pqPublicSize(spec) && g.PublicKeyDer != "" {
					if !bytes.Equal(pqSPKI(spec, pk), unhex(t, g.PublicKeyDer)) {
						t.Error("SubjectPublicKeyInfo differs from Wycheproof's publicKeyDer")
					}
				}
				o, err := openPublic(spec, pqSPKI(spec, unhex(t, g.PublicKey)))
				if err != nil {
					if tc.Result == "valid" {
						t.Fatalf("%s: %v", tc.Comment, err)
					}
					return
				}
				sp := signParams{}
				if tc.Ctx != nil {
					sp.ctx = unhex(t, *tc.Ctx)
				}
				ok, err := verifyWith(o, sp, unhex(t, tc.Msg), unhex(t, tc.Sig))
				if err != nil || ok != (tc.Result == "valid") {
					t.Fatalf("%s: verify = %v, %v; want %s", tc.Comment, ok, err, tc.Result)
				}
			})
		}
	}
	if ran < 70 {
		t.Fatalf("only %d vectors ran", ran)
	}
}

func pqPublicSize(spec KeySpec) int {
	return map[int]int{44: 1312, 65: 1952, 87: 2592}[spec.Size]
}
