package bench_test

import (
	"syscall"
	"testing"
	"time"
)

// cpuMeter measures the CPU time (user and system, every thread of the
// process: server, clients, background writers) a benchmark's loop uses.
// On a shared machine wall time per operation moves with other people's
// load; CPU time per operation moves much less, so comparisons of two
// builds of the server (docs/performance.md, "Tracing") use both.
type cpuMeter struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuMeter { return cpuMeter{start: cpuNow()} }

// report reports the CPU time per operation since start as cpu-ns/op.
func (m cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(cpuNow()-m.start)/float64(b.N), "cpu-ns/op")
}
