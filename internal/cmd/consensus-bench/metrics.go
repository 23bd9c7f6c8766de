package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// wrk does not tell statuses apart (it only counts those ≥ 400), so for
// consensusd the bench takes every answer's status from the service's own
// counter, consensus_http_requests_total on the ops listener's /metrics,
// read before and after each load.

const (
	requestsMetric = "consensus_http_requests_total"
	inFlightMetric = "consensus_http_requests_in_flight"
)

// reqKey is one series of the requests counter.
type reqKey struct {
	Route, Method, Status string
}

// reqCounts maps each series to its value.
type reqCounts map[reqKey]int64

// parseRequestCounts reads the requests counter and the in-flight gauge
// out of a Prometheus text exposition; every other metric is ignored.
func parseRequestCounts(text string) (reqCounts, float64, error) {
	out := reqCounts{}
	inFlight := 0.0
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, inFlightMetric+" "); ok {
			inFlight, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			continue
		}
		rest, ok := strings.CutPrefix(line, requestsMetric+"{")
		if !ok {
			continue
		}
		labels, value, err := splitLabels(rest)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %q: %w", requestsMetric, line, err)
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %q: %w", requestsMetric, line, err)
		}
		out[reqKey{Route: labels["route"], Method: labels["method"], Status: labels["status"]}] += int64(math.Round(v))
	}
	return out, inFlight, nil
}

// splitLabels parses `k="v",k2="v2"} value` (the text after the opening
// brace); label values may hold braces, commas and escaped quotes.
func splitLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, ", ")
		if rest, ok := strings.CutPrefix(s, "}"); ok {
			rest = strings.TrimSpace(rest)
			if rest == "" {
				return nil, "", errors.New("no value")
			}
			return labels, rest, nil
		}
		name, rest, ok := strings.Cut(s, "=\"")
		if !ok || name == "" {
			return nil, "", errors.New("malformed labels")
		}
		var v strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					v.WriteByte('\n')
					continue
				}
			}
			v.WriteByte(rest[i])
		}
		if i == len(rest) {
			return nil, "", errors.New("unterminated label value")
		}
		labels[name] = v.String()
		s = rest[i+1:]
	}
}

// delta is after − before, without the series that did not move.
func (after reqCounts) delta(before reqCounts) reqCounts {
	d := reqCounts{}
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

func (c reqCounts) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// expectation says which answers of a load are the expected ones: the
// method, a route pattern ending in RouteSuffix, and the status.
type expectation struct {
	Method, RouteSuffix string
	Status              int
}

// The expected answers of the wrk loads on consensusd.
var (
	expectRead   = expectation{Method: http.MethodGet, RouteSuffix: "/room", Status: http.StatusOK}
	expect304    = expectation{Method: http.MethodGet, RouteSuffix: "/room", Status: http.StatusNotModified}
	expectAppend = expectation{Method: http.MethodPost, RouteSuffix: "/events", Status: http.StatusCreated}
)

// split counts the expected answers of a delta and lists every other
// series as "status (method route)".
func (c reqCounts) split(e expectation) (ok int64, unexpected map[string]int) {
	unexpected = map[string]int{}
	keys := make([]reqKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		if k.Method == e.Method && k.Status == strconv.Itoa(e.Status) && strings.HasSuffix(k.Route, e.RouteSuffix) {
			ok += c[k]
			continue
		}
		unexpected[fmt.Sprintf("%s (%s %s)", k.Status, k.Method, k.Route)] += int(c[k])
	}
	return ok, unexpected
}

// scrapeRequests reads the requests counter from a /metrics URL.
func scrapeRequests(ctx context.Context, url string) (reqCounts, error) {
	c, _, err := scrapeMetrics(ctx, url)
	return c, err
}

// scrapeIdle reads the requests counter once no request is in flight (up
// to 5 s): a request wrk left behind when it stopped is still answered and
// counted, and must land in this load's delta, not in the next one's.
func scrapeIdle(ctx context.Context, url string) (reqCounts, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, inFlight, err := scrapeMetrics(ctx, url)
		if err != nil || inFlight <= 0 || time.Now().After(deadline) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func scrapeMetrics(ctx context.Context, url string) (reqCounts, float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return parseRequestCounts(string(body))
}
