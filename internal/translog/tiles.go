package translog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// EntriesLevel is the level x/mod's tlog gives the tiles of entries (its
// "data" tiles); C2SP tlog-tiles names them tile/entries/….
const EntriesLevel = -1

// ErrTilePath: a path that is not a C2SP tlog-tiles tile path.
var ErrTilePath = errors.New("not a tlog-tiles tile path")

// TilePath is the C2SP tlog-tiles path of t, relative to the log's prefix:
// tile/<L>/<N>[.p/<W>] for hashes, tile/entries/<N>[.p/<W>] for an entry
// bundle. x/mod's own Tile.Path also names the height, which C2SP fixes.
func TilePath(t tlog.Tile) string {
	level := strconv.Itoa(t.L)
	if t.L == EntriesLevel {
		level = "entries"
	}
	p := "tile/" + level + "/" + encodeIndex(t.N)
	if t.W != 1<<TileHeight {
		p += ".p/" + strconv.Itoa(t.W)
	}
	return p
}

// ParseTilePath reads a path TilePath writes, refusing every other spelling
// of the same tile (leading zeros, a full width written as .p/256).
func ParseTilePath(p string) (tlog.Tile, error) {
	rest, ok := strings.CutPrefix(p, "tile/")
	if !ok {
		return tlog.Tile{}, ErrTilePath
	}
	levelText, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return tlog.Tile{}, ErrTilePath
	}
	t := tlog.Tile{H: TileHeight, W: 1 << TileHeight}
	if levelText == "entries" {
		t.L = EntriesLevel
	} else {
		l, err := strconv.Atoi(levelText)
		if err != nil || l < 0 || l > 63 || strconv.Itoa(l) != levelText {
			return tlog.Tile{}, ErrTilePath
		}
		t.L = l
	}
	if idx, width, partial := strings.Cut(rest, ".p/"); partial {
		w, err := strconv.Atoi(width)
		if err != nil || w < 1 || w >= 1<<TileHeight || strconv.Itoa(w) != width {
			return tlog.Tile{}, ErrTilePath
		}
		t.W, rest = w, idx
	}
	n, err := decodeIndex(rest)
	if err != nil {
		return tlog.Tile{}, err
	}
	t.N = n
	if TilePath(t) != p {
		return tlog.Tile{}, ErrTilePath
	}
	return t, nil
}

// encodeIndex writes n in groups of three digits, every group but the last
// prefixed with x: 1234067 is x001/x234/067.
func encodeIndex(n int64) string {
	s := fmt.Sprintf("%03d", n%1000)
	for n >= 1000 {
		n /= 1000
		s = fmt.Sprintf("x%03d/", n%1000) + s
	}
	return s
}

func decodeIndex(s string) (int64, error) {
	parts := strings.Split(s, "/")
	var n int64
	for i, part := range parts {
		last := i == len(parts)-1
		if !last {
			var ok bool
			if part, ok = strings.CutPrefix(part, "x"); !ok {
				return 0, ErrTilePath
			}
		}
		if len(part) != 3 || n > (1<<62)/1000 {
			return 0, ErrTilePath
		}
		d, err := strconv.Atoi(part)
		if err != nil || d < 0 {
			return 0, ErrTilePath
		}
		n = n*1000 + int64(d)
	}
	return n, nil
}

// EntryBundle encodes entries as a C2SP tlog-tiles entry bundle: each entry
// as a big-endian uint16 length followed by its bytes.
func EntryBundle(entries [][]byte) ([]byte, error) {
	var out []byte
	for _, e := range entries {
		if len(e) > 0xFFFF {
			return nil, fmt.Errorf("translog: an entry of %d bytes does not fit a bundle", len(e))
		}
		out = binary.BigEndian.AppendUint16(out, uint16(len(e)))
		out = append(out, e...)
	}
	return out, nil
}

// ParseEntryBundle splits an entry bundle into its entries.
func ParseEntryBundle(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, errors.New("translog: truncated entry bundle")
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return nil, errors.New("translog: truncated entry bundle")
		}
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	return out, nil
}
