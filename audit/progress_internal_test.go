package audit

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestExportLogsProgress(t *testing.T) {
	var logs bytes.Buffer
	e := &Exporter{cfg: ExporterConfig{ProgressEvery: 2}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	recs := func(yield func(Record, error) bool) {
		for i := range 5 {
			if !yield(Record{Seq: int64(i + 1)}, nil) {
				return
			}
		}
	}
	n := 0
	for range e.withProgress("job-1", nil, recs) {
		n++
	}
	if n != 5 {
		t.Fatalf("withProgress passed on %d records, want 5", n)
	}
	if got := strings.Count(logs.String(), "audit: export progress"); got != 2 {
		t.Fatalf("%d progress lines for 5 records every 2, want 2:\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "records=4") {
		t.Errorf("progress lines do not count records:\n%s", logs.String())
	}
}
