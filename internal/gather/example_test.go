package gather_test

import (
	"fmt"

	"github.com/latchkey/latchkey/internal/gather"
)

// A group-commit writer takes what is queued, then lets the Gatherer wait
// for more while the processors are saturated, then commits.
func Example() {
	queue := make(chan int, 16)
	queue <- 1
	queue <- 2
	var batch []int
	take := func() bool {
		n := len(batch)
		for {
			select {
			case v := <-queue:
				batch = append(batch, v)
			default:
				return len(batch) > n
			}
		}
	}
	take()
	gather.New().Wait(0, func() bool { return len(batch) == 16 }, take)
	fmt.Println("commit", batch)
	// Output: commit [1 2]
}
