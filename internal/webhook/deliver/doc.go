// Package deliver makes webhook deliveries: River's worker of the jobs the
// webhook trigger queues signs each delivery with the service key, sends it
// by package webhook's rules and records the attempt for the retry
// schedule.
package deliver
