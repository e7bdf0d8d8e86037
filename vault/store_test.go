package vault_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/latchkey/latchkey/vault"
)

func TestListQueryNormalize(t *testing.T) {
	tests := []struct {
		name    string
		in      vault.ListQuery
		want    vault.ListQuery
		wantErr *refusal
	}{
		{name: "defaults", in: vault.ListQuery{}, want: vault.ListQuery{Limit: vault.DefaultListLimit}},
		{name: "kept", in: vault.ListQuery{Skip: 20, Limit: 5, Name: "k"}, want: vault.ListQuery{Skip: 20, Limit: 5, Name: "k"}},
		{name: "max limit", in: vault.ListQuery{Limit: vault.MaxListLimit}, want: vault.ListQuery{Limit: vault.MaxListLimit}},
		{name: "negative skip", in: vault.ListQuery{Skip: -1}, wantErr: invalid("skip", "skip must not be negative")},
		{name: "negative limit", in: vault.ListQuery{Limit: -1}, wantErr: invalid("limit", "limit must be between 1 and 1000")},
		{name: "limit too large", in: vault.ListQuery{Limit: vault.MaxListLimit + 1}, wantErr: invalid("limit", "limit must be between 1 and 1000")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Normalize()
			if diff := cmp.Diff(tt.wantErr, refusalOf(err)); diff != "" {
				t.Fatalf("Normalize error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Normalize (-want +got):\n%s", diff)
			}
		})
	}
}
