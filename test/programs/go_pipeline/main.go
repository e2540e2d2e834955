// go_pipeline: two goroutines joined by a channel; the consumer hashes each
// item (the bottleneck), the producer fills it. A Go program with no cgo,
// built twice by CMake: as `go build` makes it (statically linked, which
// `coz run` cannot load its runtime into) and with the command `coz run`
// gives for such a binary (CGO_ENABLED=1 go build -ldflags=-linkmode=external).
//
// Usage: go_pipeline [ITEMS [STATUS]]   (default 20000 items; STATUS: os.Exit's)
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
)

func produce(items int, out chan<- []byte) {
	for i := 0; i < items; i++ {
		item := make([]byte, 2048)
		item[0] = byte(i) // @line:produce
		out <- item
	}
	close(out)
}

func main() {
	items := 20000
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil && n > 0 {
			items = n
		}
	}
	queue := make(chan []byte, 16)
	go produce(items, queue)
	var last [32]byte
	count := 0
	for item := range queue {
		last = sha256.Sum256(item) // @line:consume
		count++
	}
	fmt.Printf("go_pipeline items=%d last=%x\n", count, last[:4])
	if len(os.Args) > 2 {
		if status, err := strconv.Atoi(os.Args[2]); err == nil {
			os.Exit(status)
		}
	}
}
