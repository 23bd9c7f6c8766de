package parked

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// tcpPair is a real loopback connection: the server's side wrapped as
// Listener wraps it, and the client's side.
func tcpPair(t *testing.T) (*GatherConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	gc, ok := wrapGather(server).(*GatherConn)
	if !ok {
		t.Fatalf("wrapGather(%T) did not wrap", server)
	}
	return gc, client
}

// arrived reads what reaches the client within wait.
func arrived(t *testing.T, c net.Conn, wait time.Duration) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			return got
		}
	}
}

func TestGatherConnKeepsTheFlushForTheLargeWrite(t *testing.T) {
	gc, client := tcpPair(t)
	head := bytes.Repeat([]byte("h"), 4<<10)
	body := bytes.Repeat([]byte("b"), 200<<10)

	gc.Gather()
	if n, err := gc.Write(head); n != len(head) || err != nil {
		t.Fatalf("kept write: %d, %v", n, err)
	}
	if got := arrived(t, client, 100*time.Millisecond); len(got) != 0 {
		t.Fatalf("%d bytes went out before the large write", len(got))
	}
	done := make(chan error, 1)
	go func() {
		n, err := gc.Write(body)
		if err == nil && n != len(body) {
			err = io.ErrShortWrite
		}
		done <- errors.Join(err, gc.Release())
	}()
	var got []byte
	for len(got) < len(head)+len(body) {
		got = append(got, arrived(t, client, 2*time.Second)...)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(head, body...)) {
		t.Fatal("the bytes arrived out of order or changed")
	}
	if gc.pending != nil || gc.gathering {
		t.Fatal("the connection still gathers after release")
	}
}

func TestGatherConnReleaseSendsWhatItKept(t *testing.T) {
	gc, client := tcpPair(t)
	gc.Gather()
	_, _ = gc.Write([]byte("small "))
	_, _ = gc.Write([]byte("answer"))
	if err := gc.Release(); err != nil {
		t.Fatal(err)
	}
	if got := arrived(t, client, time.Second); string(got) != "small answer" {
		t.Fatalf("got %q", got)
	}
}

// A connection that is not gathering writes at once: a stream's flushed
// event is never held back waiting for a write that may not come.
func TestGatherConnWritesAtOnceWhenNotGathering(t *testing.T) {
	gc, client := tcpPair(t)
	if _, err := gc.Write([]byte("event")); err != nil {
		t.Fatal(err)
	}
	if got := arrived(t, client, time.Second); string(got) != "event" {
		t.Fatalf("got %q", got)
	}
}
