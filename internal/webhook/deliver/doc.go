// Package deliver drains the durable webhook queue (SPEC R-LIVE-HOOK): a
// Worker on every replica claims due deliveries, signs each with the
// service key and sends it by package webhook's rules, and records the
// attempt for the retry schedule.
package deliver
