package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if !strings.HasSuffix(text, "\n") {
		text += "\n" // the format ends every line, the last one too
	}
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, 0, fmt.Errorf("/metrics: %w", err)
	}
	out := reqCounts{}
	if f := families[requestsMetric]; f != nil {
		for _, m := range f.GetMetric() {
			k := reqKey{}
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "route":
					k.Route = l.GetValue()
				case "method":
					k.Method = l.GetValue()
				case "status":
					k.Status = l.GetValue()
				}
			}
			out[k] += int64(math.Round(value(m)))
		}
	}
	inFlight := 0.0
	if f := families[inFlightMetric]; f != nil && len(f.GetMetric()) > 0 {
		inFlight = value(f.GetMetric()[0])
	}
	return out, inFlight, nil
}

// value is a sample's value, typed or not (a line without its # TYPE is
// untyped).
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
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
