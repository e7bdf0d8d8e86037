package vault

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeBatch: the one-pass decoding of a batch gives the items the
// item-by-item decoding gives, and declines every body it cannot decode
// whole (a malformed item must fail alone, through BatchInput), a body
// without batch_input, and batch_input null.
func TestDecodeBatch(t *testing.T) {
	tests := []struct {
		name, body string
		fast       bool
	}{
		{"batch", `{"batch_input":[{"plaintext":"YQ==","reference":"a"},{"ciphertext":"lk:v0:x","associated_data":"Yg==","key_version":2},{},null,{"jws_header":{"typ":"JWT","n":1.50}}]}`, true},
		{"empty batch", `{"batch_input":[]}`, true},
		{"case-insensitive name", `{"BATCH_INPUT":[{"Plaintext":"YQ=="}]}`, true},
		{"a malformed item", `{"batch_input":[{"plaintext":"YQ=="},{"plaintext":5}]}`, false},
		{"an item not an object", `{"batch_input":[{"plaintext":"YQ=="},"x"]}`, false},
		{"a malformed single field", `{"plaintext":5,"batch_input":[{"plaintext":"YQ=="}]}`, false},
		{"single", `{"plaintext":"YQ=="}`, false},
		{"batch_input null", `{"batch_input":null}`, false},
		{"trailing data", `{"batch_input":[{}]} {}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Body
			if got := b.DecodeBatch([]byte(tt.body)); got != tt.fast {
				t.Fatalf("DecodeBatch = %v, want %v", got, tt.fast)
			}
			if !tt.fast {
				if b.items != nil {
					t.Errorf("declined, yet items %v", b.items)
				}
				return
			}
			var slow Body
			if err := json.Unmarshal([]byte(tt.body), &slow); err != nil {
				t.Fatal(err)
			}
			want := make([]Input, len(slow.BatchInput))
			for i, raw := range slow.BatchInput {
				if err := decodeItem(raw, &want[i]); err != nil {
					t.Fatalf("item %d: %v", i, err)
				}
			}
			if b.BatchInput != nil {
				t.Errorf("BatchInput %v left beside the items", b.BatchInput)
			}
			if d := cmp.Diff(want, b.items); d != "" {
				t.Errorf("items (-item by item +one pass):\n%s", d)
			}
		})
	}
}
