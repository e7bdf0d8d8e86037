package vtoken_test

import (
	"fmt"
	"os"

	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/vtoken"
)

// ParsePFX applies a token's rules to a PFX file without storing anything:
// here the openssl-made chain fixture, for a V1.0 token (2048-bit keys).
func ExampleParsePFX() {
	pfx, err := os.ReadFile("testdata/chain.pfx")
	if err != nil {
		panic(err)
	}
	p, err := vtoken.ParsePFX(pfx, "pfx-password", vtoken.V1.MaxKeySize())
	if err != nil {
		panic(err)
	}
	fmt.Println(vtoken.SerialHex(p.Leaf), p.Leaf.Subject, p.Key.N.BitLen())
	for _, c := range p.Chain {
		fmt.Println(c.Subject)
	}
	_, err = vtoken.ParsePFX(pfx, "guess", vtoken.V1.MaxKeySize())
	fmt.Println(fault.KindOf(err), "-", fault.MessageOf(err))
	// Output:
	// ABCDEF0123 CN=Token User,O=Latchkey 2048
	// CN=Latchkey Test Intermediate
	// CN=Latchkey Test Root
	// invalid - the PFX password is wrong
}
