package main

// streamReader is the reader of one message schema's event stream; %[1]s
// is the schema's Go type, whose UnmarshalJSON takes the message as the
// JSON object {"event", "id", "data"}.
const streamReader = `
// %[1]sReader reads a text/event-stream answer as %[1]s values: each
// message's event, id and data lines (the data is JSON) become the object
// {"event", "id", "data"} the contract's %[1]s describes. Lines end with
// LF, as the service writes them.
type %[1]sReader struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// New%[1]sReader reads resp, which must be a 200 text/event-stream
// answer; any other answer is closed and returned as the error.
func New%[1]sReader(resp *http.Response) (*%[1]sReader, error) {
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("oapiclient: the stream answered HTTP %%d (%%s): %%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	return &%[1]sReader{body: resp.Body, sc: sc}, nil
}

// Next returns the next message, skipping comments (the keep-alives); it
// returns io.EOF when the stream ends.
func (r *%[1]sReader) Next() (%[1]s, error) {
	var msg struct {
		Event string          ` + "`json:\"event\"`" + `
		ID    *string         ` + "`json:\"id,omitempty\"`" + `
		Data  json.RawMessage ` + "`json:\"data\"`" + `
	}
	var data []string
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			if msg.Event == "" && data == nil {
				continue
			}
			msg.Data = json.RawMessage(strings.Join(data, "\n"))
			b, err := json.Marshal(msg)
			if err != nil {
				return %[1]s{}, fmt.Errorf("oapiclient: a %%q message whose data is not JSON: %%w", msg.Event, err)
			}
			var m %[1]s
			if err := m.UnmarshalJSON(b); err != nil {
				return %[1]s{}, err
			}
			return m, nil
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			// A comment.
		case "event":
			msg.Event = value
		case "id":
			msg.ID = &value
		case "data":
			data = append(data, value)
		}
	}
	if err := r.sc.Err(); err != nil {
		return %[1]s{}, err
	}
	return %[1]s{}, io.EOF
}

// Close ends the stream.
func (r *%[1]sReader) Close() error { return r.body.Close() }
`
