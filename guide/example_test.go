package guide_test

import (
	"context"
	"fmt"
	"log"
	"time"

	latchkey "github.com/latchkey/latchkey"
	"github.com/latchkey/latchkey/clock/clocktest"
	"github.com/latchkey/latchkey/identity"
	"github.com/latchkey/latchkey/seal"
	"github.com/latchkey/latchkey/store/memstore"
)

// A guide session ends after 10 minutes without activity while the page is
// open, even though the page keeps pinging.
func ExampleService_Check() {
	ctx := context.Background()
	clk := clocktest.New(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	p, err := latchkey.New(ctx, latchkey.Config{Store: memstore.New(), MasterKey: seal.NewKey(), Clock: clk,
		PasswordParams: identity.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}, AllowWeakPasswordHashing: true})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Bootstrap(ctx, "a-long-admin-password"); err != nil {
		log.Fatal(err)
	}
	id, _, err := p.Guide.Login(ctx, identity.LoginRequest{Name: "admin", Password: "a-long-admin-password", AuthDomain: "root"}, "")
	if err != nil {
		log.Fatal(err)
	}
	for minute := 1; minute <= 10; minute++ {
		clk.Advance(30 * time.Second)
		p.Guide.Check(ctx, id, false) // the open page's ping, without activity
		clk.Advance(30 * time.Second)
		_, err := p.Guide.Check(ctx, id, false)
		fmt.Printf("%d min: %v\n", minute, err)
	}
	// Output:
	// 1 min: <nil>
	// 2 min: <nil>
	// 3 min: <nil>
	// 4 min: <nil>
	// 5 min: <nil>
	// 6 min: <nil>
	// 7 min: <nil>
	// 8 min: <nil>
	// 9 min: <nil>
	// 10 min: unauthenticated: the guide session has expired; log in again
}
