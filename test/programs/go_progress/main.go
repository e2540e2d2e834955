// go_progress: progress points marked in a Go program's source with the coz
// package (include/go/coz), as a program written for Coz's Go package marks
// them: a throughput point per item (named, and one named after its line)
// and a latency point around each item's work.
//
// Usage: go_progress [ITEMS]   (default 20000)
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"

	coz "github.com/plasma-umass/coz/go"
)

func work(item []byte) [32]byte {
	defer coz.Scope("item work")()
	return sha256.Sum256(item) // @line:work
}

func main() {
	items := 20000
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil && n > 0 {
			items = n
		}
	}
	item := make([]byte, 2048)
	var last [32]byte
	for i := 0; i < items; i++ {
		item[0] = byte(i)
		last = work(item)
		coz.ProgressNamed("item done")
		coz.Progress() // @line:progress
	}
	fmt.Printf("go_progress items=%d last=%x available=%v\n", items, last[:4], coz.Available())
}
