package clocktest_test

import (
	"testing"
	"time"

	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/clock/clocktest"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestTimerFiresOnlyWhenDue(t *testing.T) {
	f := clocktest.New(epoch)
	tm := f.NewTimer(time.Minute)
	f.Advance(59 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	f.Advance(time.Second)
	select {
	case got := <-tm.C():
		if !got.Equal(epoch.Add(time.Minute)) {
			t.Fatalf("fired at %v", got)
		}
	default:
		t.Fatal("timer did not fire")
	}
	if f.Timers() != 0 {
		t.Fatalf("fired timer still active")
	}
}

func TestStopAndReset(t *testing.T) {
	f := clocktest.New(epoch)
	tm := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of active timer reported false")
	}
	f.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	tm.Reset(time.Second)
	f.Advance(time.Second)
	select {
	case <-tm.C():
	default:
		t.Fatal("reset timer did not fire")
	}
}

func TestTickerAndSleep(t *testing.T) {
	f := clocktest.New(epoch)
	tk := f.NewTicker(time.Second)
	defer tk.Stop()
	f.Advance(time.Second)
	<-tk.C()
	done := make(chan bool)
	go func() { done <- clock.Sleep(f, time.Minute, nil) }()
	f.WaitForTimers(2) // the ticker and the sleeper
	f.Advance(time.Minute)
	if !<-done {
		t.Fatal("Sleep reported interruption")
	}
	stop := make(chan struct{})
	go func() { done <- clock.Sleep(f, time.Minute, stop) }()
	f.WaitForTimers(2)
	close(stop)
	if <-done {
		t.Fatal("Sleep ignored done")
	}
}
