package envelope

import "bytes"

// Marker lines around the JSON envelope in an invitation email body.
const (
	BeginMarker = "---BEGIN CONSENSUS INVITATION V1---"
	EndMarker   = "---END CONSENSUS INVITATION V1---"
)

// Block returns the envelope as it appears in the email body: the BEGIN
// line, WireJSON (credentials in clear), the END line, each ending in "\n".
func (e Envelope) Block() ([]byte, error) {
	js, err := e.WireJSON()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(BeginMarker)+len(js)+len(EndMarker)+2)
	b = append(b, BeginMarker+"\n"...)
	b = append(b, js...)
	return append(b, EndMarker+"\n"...), nil
}

// ExtractBlock returns the bytes between the marker lines of the one
// invitation block in body. Marker lines must match exactly; they may end in
// "\n" or "\r\n". It returns a *CheckError with Check "block" when there is no
// block, more than one, a BEGIN without END, an END without BEGIN, or a
// marker line with extra whitespace around it.
func ExtractBlock(body []byte) ([]byte, error) {
	blocks, err := FindBlocks(body)
	if err != nil {
		return nil, err
	}
	switch len(blocks) {
	case 0:
		return nil, checkErr(CheckBlock, "no invitation block")
	case 1:
		return blocks[0], nil
	default:
		return nil, checkErr(CheckBlock, "%d invitation blocks; expected exactly one", len(blocks))
	}
}

// FindBlocks returns every complete block in body, for a caller that counts
// blocks across several MIME parts. Zero blocks and no stray marker is not an
// error (the mail is simply not an invitation); a stray, nested or padded
// marker is a *CheckError with Check "block".
func FindBlocks(body []byte) ([][]byte, error) {
	var blocks [][]byte
	start := -1 // offset of the first byte after the BEGIN line, or -1
	for off := 0; off < len(body); {
		end := bytes.IndexByte(body[off:], '\n')
		next := len(body)
		if end >= 0 {
			next = off + end + 1
		} else {
			end = len(body) - off
		}
		line := body[off : off+end]
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case string(line) == BeginMarker:
			if start >= 0 {
				return nil, checkErr(CheckBlock, "BEGIN marker inside a block")
			}
			start = next
		case string(line) == EndMarker:
			if start < 0 {
				return nil, checkErr(CheckBlock, "END marker without BEGIN")
			}
			blocks = append(blocks, body[start:off])
			start = -1
		default:
			if t := string(bytes.TrimSpace(line)); t == BeginMarker || t == EndMarker {
				return nil, checkErr(CheckBlock, "marker line with surrounding whitespace")
			}
		}
		off = next
	}
	if start >= 0 {
		return nil, checkErr(CheckBlock, "BEGIN marker without END (truncated block)")
	}
	return blocks, nil
}
