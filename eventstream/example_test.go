package eventstream_test

import (
	"fmt"

	"github.com/latchkey/latchkey/eventstream"
)

// The webhook-signature header of a delivery to a subscription with auth
// {"type":"hmac","secret":"whsec_..."}: receivers recompute it over
// "<webhook-id>.<webhook-timestamp>.<body>" with the decoded secret.
func ExampleSign() {
	key, _ := eventstream.HMACKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	fmt.Println(eventstream.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", []byte(`{"test": 2432232314}`)))
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}
