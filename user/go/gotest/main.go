// gotest: a Go program run in Kiln and on the host, output compared.
//
// It exercises what the Go runtime needs from the kernel: threads
// (clone), futexes, signals (preemption uses SIGURG), timers (the
// runtime's netpoller sleeps in epoll_pwait), the netpoller itself on
// pipes (epoll_ctl with EPOLLET, read deadlines), goroutines and
// channels, a JSON round trip, and files. Built with CGO_ENABLED=0
// using Debian's Go toolchain; prints only deterministic facts.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var checks, failed int

func check(ok bool, what string) {
	checks++
	if ok {
		fmt.Printf("%s: ok\n", what)
	} else {
		failed++
		fmt.Printf("FAIL: %s\n", what)
	}
}

func goroutines() {
	// Fan out 1000 goroutines, fan their results back in over a channel.
	results := make(chan int, 16)
	var wg sync.WaitGroup
	for i := 1; i <= 1000; i++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			results <- n * n
		}(i)
	}
	go func() { wg.Wait(); close(results) }()
	sum := 0
	for r := range results {
		sum += r
	}
	fmt.Printf("sum of squares 1..1000 over 1000 goroutines: %d\n", sum)
	check(sum == 333833500, "fan-in sum")

	// A mutex and an atomic counter hammered from many goroutines.
	var mu sync.Mutex
	var atomicCount int64
	count := 0
	wg = sync.WaitGroup{}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				mu.Lock()
				count++
				mu.Unlock()
				atomic.AddInt64(&atomicCount, 1)
			}
		}()
	}
	wg.Wait()
	check(count == 80000 && atomicCount == 80000, "8 goroutines x 10000 increments, mutex and atomic")

	// An unbuffered ping-pong.
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(pong)
	}()
	v := 0
	for i := 0; i < 10000; i++ {
		ping <- v
		v = <-pong
	}
	close(ping)
	check(v == 10000, "10000 unbuffered ping-pongs")

	// A pipeline of stages.
	src := make(chan int)
	go func() {
		for i := 0; i < 100; i++ {
			src <- i
		}
		close(src)
	}()
	stage := func(in <-chan int, f func(int) int) <-chan int {
		out := make(chan int)
		go func() {
			for x := range in {
				out <- f(x)
			}
			close(out)
		}()
		return out
	}
	total := 0
	for x := range stage(stage(src, func(x int) int { return x * 2 }), func(x int) int { return x + 1 }) {
		total += x
	}
	check(total == 10000, "a three-stage pipeline")
	fmt.Printf("GOMAXPROCS at least 1: %v\n", runtime.GOMAXPROCS(0) >= 1)
}

func timers() {
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	check(time.Since(start) >= 20*time.Millisecond, "time.Sleep(20ms) sleeps at least 20ms")

	select {
	case <-time.After(10 * time.Millisecond):
		check(true, "time.After fires in a select")
	case <-time.After(10 * time.Second):
		check(false, "time.After fires in a select")
	}

	ticker := time.NewTicker(5 * time.Millisecond)
	ticks := 0
	for range ticker.C {
		ticks++
		if ticks == 5 {
			break
		}
	}
	ticker.Stop()
	check(ticks == 5, "a ticker ticks 5 times")

	t := time.NewTimer(time.Hour)
	check(t.Stop(), "stopping a pending timer")
	t.Reset(5 * time.Millisecond)
	<-t.C
	check(true, "a reset timer fires")

	// Each AfterFunc runs in a goroutine of its own, so two whose deadlines
	// passed while the program was not running (a loaded host) may report
	// in either order. What Go promises, and what the kernel's timers
	// decide, is that none fires before its deadline and all fire.
	type firing struct {
		name  string
		early bool
	}
	fired := make(chan firing, 3)
	afterStart := time.Now()
	for _, f := range []struct {
		name  string
		delay time.Duration
	}{{"c", 30 * time.Millisecond}, {"a", 10 * time.Millisecond}, {"b", 20 * time.Millisecond}} {
		f := f
		time.AfterFunc(f.delay, func() { fired <- firing{f.name, time.Since(afterStart) < f.delay} })
	}
	seen := map[string]bool{}
	early := false
	for i := 0; i < 3; i++ {
		f := <-fired
		seen[f.name] = true
		early = early || f.early
	}
	check(len(seen) == 3, "three AfterFuncs fire")
	check(!early, "no AfterFunc fires before its deadline")

	// Many concurrent sleepers.
	var wg sync.WaitGroup
	var woke int64
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(i%10) * time.Millisecond)
			atomic.AddInt64(&woke, 1)
		}(i)
	}
	wg.Wait()
	check(woke == 200, "200 goroutines sleeping at once all wake")
}

type Order struct {
	ID       int               `json:"id"`
	Customer string            `json:"customer"`
	Items    []Item            `json:"items"`
	Tags     map[string]string `json:"tags,omitempty"`
	Paid     bool              `json:"paid"`
	Note     *string           `json:"note"`
}

type Item struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

func jsonRoundTrip() {
	note := "leave at the door \u00e9\u4e2d"
	in := Order{
		ID: 42, Customer: "Ada <ada@example.org>",
		Items: []Item{{"A-1", 2, 3.25}, {"B-7", 1, 19.99}},
		Tags:  map[string]string{"z": "last", "a": "first"},
		Paid:  true, Note: &note,
	}
	b, err := json.Marshal(in)
	check(err == nil, "json.Marshal")
	fmt.Printf("json: %s\n", b)
	var out Order
	check(json.Unmarshal(b, &out) == nil, "json.Unmarshal")
	check(out.ID == in.ID && out.Customer == in.Customer && len(out.Items) == 2 &&
		out.Items[1] == in.Items[1] && out.Tags["a"] == "first" && *out.Note == note, "round trip is lossless")
	pretty, _ := json.MarshalIndent(map[string]interface{}{"n": 1.5, "list": []int{3, 1, 2}, "nil": nil}, "", "  ")
	fmt.Printf("indented:\n%s\n", pretty)
	var bad Order
	err = json.Unmarshal([]byte(`{"id": "not a number"}`), &bad)
	fmt.Printf("bad input: %v\n", err)
}

func files() {
	dir, err := os.MkdirTemp("", "gotest")
	check(err == nil, "os.MkdirTemp")
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "data.txt")
	check(os.WriteFile(p, []byte("hello\n"), 0o644) == nil, "os.WriteFile")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	check(err == nil, "open for append")
	fmt.Fprintf(f, "line %d\n", 2)
	f.Close()
	data, err := os.ReadFile(p)
	check(err == nil, "os.ReadFile")
	fmt.Printf("file content: %q\n", data)
	st, err := os.Stat(p)
	check(err == nil && st.Size() == int64(len(data)) && st.Mode().Perm() == 0o644, "stat size and mode")
	for _, name := range []string{"c", "a", "b"} {
		os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600)
	}
	check(os.Rename(p, filepath.Join(dir, "renamed.txt")) == nil, "rename")
	check(os.Mkdir(filepath.Join(dir, "sub"), 0o755) == nil, "mkdir")
	entries, err := os.ReadDir(dir)
	check(err == nil, "os.ReadDir")
	var names []string
	for _, e := range entries {
		kind := "file"
		if e.IsDir() {
			kind = "dir"
		}
		names = append(names, e.Name()+"("+kind+")")
	}
	sort.Strings(names)
	fmt.Printf("directory: %s\n", strings.Join(names, " "))
	_, err = os.Stat(filepath.Join(dir, "missing"))
	check(errors.Is(err, os.ErrNotExist), "a missing file is ErrNotExist")

	// Large write and read back through a buffered copy.
	big := filepath.Join(dir, "big")
	w, _ := os.Create(big)
	chunk := []byte(strings.Repeat("0123456789abcdef", 4096))
	for i := 0; i < 16; i++ {
		w.Write(chunk)
	}
	w.Close()
	r, _ := os.Open(big)
	n, err := io.Copy(io.Discard, r)
	r.Close()
	check(err == nil && n == 16*int64(len(chunk)), "1 MiB written and read back")
}

func pipes() {
	// os.Pipe files go through the runtime's netpoller (epoll, edge-triggered).
	r, w, err := os.Pipe()
	check(err == nil, "os.Pipe")
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	for i := 0; i < 3; i++ {
		fmt.Fprintf(w, "msg%d;", i)
		time.Sleep(2 * time.Millisecond)
	}
	w.Close()
	fmt.Printf("read through the netpoller: %s\n", <-done)
	r.Close()

	// A read deadline on an idle pipe.
	r, w, _ = os.Pipe()
	r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	buf := make([]byte, 8)
	_, err = r.Read(buf)
	check(errors.Is(err, os.ErrDeadlineExceeded), "a read deadline on an empty pipe expires")
	// Data arriving before the deadline.
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	go func() {
		time.Sleep(10 * time.Millisecond)
		w.Write([]byte("late"))
	}()
	n, err := r.Read(buf)
	check(err == nil && string(buf[:n]) == "late", "a read woken by a write before its deadline")
	r.Close()
	w.Close()
}

func signals() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	select {
	case s := <-c:
		fmt.Printf("signal.Notify got %v\n", s)
	case <-time.After(5 * time.Second):
		check(false, "signal.Notify")
	}
	signal.Stop(c)
	// A busy goroutine is preempted (SIGURG) so another can run.
	var stop int32
	go func() {
		for atomic.LoadInt32(&stop) == 0 {
		}
	}()
	runtime.Gosched()
	time.Sleep(10 * time.Millisecond)
	atomic.StoreInt32(&stop, 1)
	check(true, "the main goroutine ran alongside a spinning one")
}

func main() {
	goroutines()
	timers()
	jsonRoundTrip()
	files()
	pipes()
	signals()
	fmt.Printf("gotest: %d checks, %d failed\n", checks, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
