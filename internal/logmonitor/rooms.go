package logmonitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Room is a room the monitor can read: a participant's room URL
// (…/invitations/{invitationId}/room) and that participant's token.
type Room struct {
	URL   string
	Token string
}

// ParseRooms reads a rooms file: one room a line, its URL and the
// participant token, separated by white space; blank lines and lines
// starting with # are skipped. The error names a line, never a token.
func ParseRooms(b []byte) ([]Room, error) {
	var out []Room
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want ROOM_URL TOKEN", line)
		}
		if u, err := url.Parse(f[0]); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("line %d: the first field is not an http(s) URL", line) // nor quoted: it may be a token
		}
		out = append(out, Room{URL: f[0], Token: f[1]})
	}
	return out, sc.Err()
}

// roomView is what the monitor reads of a room.
type roomView struct {
	AgreementID string `json:"agreementId"`
	ChainHead   string `json:"chainHead"`
	ServerTime  string `json:"serverTime"`
	Events      []struct {
		Seq       int64  `json:"seq"`
		CreatedAt string `json:"createdAt"`
	} `json:"events"`

	age time.Duration // how long before serverTime the head changed
}

func (v *roomView) seq() int64 {
	if len(v.Events) == 0 {
		return 0
	}
	return v.Events[len(v.Events)-1].Seq
}

// readRooms reads every room; a room that cannot be read is reported
// unchecked and left out.
func (r *run) readRooms() []*roomView {
	var out []*roomView
	for _, rm := range r.cfg.Rooms {
		b, err := r.f.get(rm.URL, maxDocument, "Consensus-Participant "+rm.Token)
		var v roomView
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err == nil {
			err = v.measure()
		}
		if err != nil {
			r.rep.add("room "+rm.URL, Unchecked, "%v", err)
			continue
		}
		out = append(out, &v)
	}
	return out
}

// measure checks the members the monitor needs and how old the head is,
// by the service's clock alone.
func (v *roomView) measure() error {
	if v.AgreementID == "" || v.ServerTime == "" || v.ChainHead == "" {
		return fmt.Errorf("not a room: no agreementId, chainHead or serverTime")
	}
	if len(v.Events) == 0 {
		return nil
	}
	now, err1 := time.Parse(time.RFC3339Nano, v.ServerTime)
	at, err2 := time.Parse(time.RFC3339Nano, v.Events[len(v.Events)-1].CreatedAt)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("not a room: bad serverTime or createdAt")
	}
	v.age = now.Sub(at)
	return nil
}

// checkRooms compares each room's head with the latest head the log holds
// for its agreement.
func (r *run) checkRooms(rooms []*roomView) {
	for _, v := range rooms {
		name := "room " + v.AgreementID
		seq := v.seq()
		h, logged := r.st.Heads[v.AgreementID]
		switch {
		case seq == 0 && !logged:
			r.rep.add(name, OK, "no events yet, nothing to log")
		case logged && h.Seq == seq && h.ChainHead == v.ChainHead:
			r.rep.add(name, OK, "head seq %d, chainHead %s: the log's %s leaf %d", seq, v.ChainHead, h.Kind, h.Index)
		case logged && h.Seq == seq:
			r.rep.add(name, Fail, "the room shows head seq %d with chainHead %s, the log holds chainHead %s (leaf %d): the room's history is not the one logged",
				seq, v.ChainHead, h.ChainHead, h.Index)
		case logged && h.Seq > seq:
			r.rep.add(name, Fail, "the room shows head seq %d, the log already holds seq %d (leaf %d): the room lost events the log recorded", seq, h.Seq, h.Index)
		case v.age < r.cfg.Grace:
			r.rep.add(name, Pending, "head seq %d changed %s before the room was read, not in the log yet (%s)", seq, v.age.Round(time.Millisecond), loggedHead(h, logged))
		default:
			r.rep.add(name, Fail, "head seq %d (chainHead %s) changed %s before the room was read and is not in the log (%s)",
				seq, v.ChainHead, v.age.Round(time.Millisecond), loggedHead(h, logged))
		}
	}
}

func loggedHead(h Head, ok bool) string {
	if !ok {
		return "the log holds no head for it"
	}
	return fmt.Sprintf("its last head there is seq %d, leaf %d", h.Seq, h.Index)
}
