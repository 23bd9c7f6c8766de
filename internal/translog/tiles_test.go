package translog

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

func TestTilePathRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tile tlog.Tile
		path string
	}{
		{tlog.Tile{H: 8, L: 0, N: 0, W: 256}, "tile/0/000"},
		{tlog.Tile{H: 8, L: 0, N: 0, W: 1}, "tile/0/000.p/1"},
		{tlog.Tile{H: 8, L: 1, N: 5, W: 255}, "tile/1/005.p/255"},
		{tlog.Tile{H: 8, L: 2, N: 999, W: 256}, "tile/2/999"},
		{tlog.Tile{H: 8, L: 0, N: 1000, W: 256}, "tile/0/x001/000"},
		{tlog.Tile{H: 8, L: 0, N: 1234067, W: 256}, "tile/0/x001/x234/067"},
		{tlog.Tile{H: 8, L: 3, N: 1234067, W: 17}, "tile/3/x001/x234/067.p/17"},
		{tlog.Tile{H: 8, L: EntriesLevel, N: 0, W: 256}, "tile/entries/000"},
		{tlog.Tile{H: 8, L: EntriesLevel, N: 1001, W: 3}, "tile/entries/x001/001.p/3"},
		{tlog.Tile{H: 8, L: 63, N: 0, W: 256}, "tile/63/000"},
	} {
		if got := TilePath(tc.tile); got != tc.path {
			t.Errorf("TilePath(%+v) = %q, want %q", tc.tile, got, tc.path)
		}
		got, err := ParseTilePath(tc.path)
		if err != nil || got != tc.tile {
			t.Errorf("ParseTilePath(%q) = %+v, %v, want %+v", tc.path, got, err, tc.tile)
		}
	}
}

func TestParseTilePathRefuses(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"", "tile", "tile/", "tile/0", "tile/0/", "/tile/0/000", "tiles/0/000",
		"tile/0/0", "tile/0/00", "tile/0/0000", // an index group is three digits
		"tile/00/000", "tile/01/000", "tile/+1/000", "tile/-1/000", "tile/64/000", "tile/x/000",
		"tile/0/001/000",   // every group but the last starts with x
		"tile/0/x000/001",  // a leading zero group
		"tile/0/x001/x000", // the last group has no x
		"tile/0/x1/000", "tile/0/+01", "tile/0/-01", "tile/0/0x1",
		"tile/0/000.p/256", // a full tile has no width
		"tile/0/000.p/0", "tile/0/000.p/01", "tile/0/000.p/+1", "tile/0/000.p/", "tile/0/000.p/300",
		"tile/0/000.p/1/", // trailing slash
		"tile/0/000/",
		"tile/entries/000.p/256", "tile/Entries/000", "tile/entries", "tile/entries/",
		"tile/8/0/000", // x/mod's own path, which names the height
		"tile/0/x999/x999/x999/x999/x999/x999/x999/999", // beyond int64
	} {
		if got, err := ParseTilePath(p); !errors.Is(err, ErrTilePath) {
			t.Errorf("ParseTilePath(%q) = %+v, %v, want ErrTilePath", p, got, err)
		}
	}
}

func TestEntryBundle(t *testing.T) {
	t.Parallel()
	entries := [][]byte{[]byte("one"), {}, bytes.Repeat([]byte{0xff}, 300)}
	b, err := EntryBundle(entries)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 3, 'o', 'n', 'e', 0, 0, 1, 44}; !bytes.HasPrefix(b, want) || len(b) != 5+2+2+300 {
		t.Fatalf("bundle %x, want big-endian uint16 lengths", b[:12])
	}
	got, err := ParseEntryBundle(b)
	if err != nil || len(got) != 3 || string(got[0]) != "one" || len(got[1]) != 0 || !bytes.Equal(got[2], entries[2]) {
		t.Fatalf("ParseEntryBundle = %q, %v", got, err)
	}
	if got, err := ParseEntryBundle(nil); err != nil || len(got) != 0 {
		t.Fatalf("empty bundle: %q, %v", got, err)
	}
	for _, bad := range [][]byte{{0}, {0, 4, 'a', 'b', 'c'}, append(b, 0)} {
		if _, err := ParseEntryBundle(bad); err == nil {
			t.Errorf("ParseEntryBundle(%x) accepted a truncated bundle", bad)
		}
	}
	if _, err := EntryBundle([][]byte{make([]byte, 1<<16)}); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("a 64 KiB entry: %v", err)
	}
	if _, err := EntryBundle([][]byte{make([]byte, 1<<16-1)}); err != nil {
		t.Fatalf("the largest entry: %v", err)
	}
}
