package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// scaleRun is what the scale phase measured before the usual loads.
type scaleRun struct {
	spec              scaleSpec
	load              scaleResult
	vacuum            time.Duration // VACUUM (ANALYZE) of the service database after the load
	startEmpty        time.Duration // consensusd start to /api/health 200 on the empty database (migrating it)
	startLoaded       time.Duration // the same on the loaded database (every migration applied)
	migrateEmpty      time.Duration // consensusd migrate on a fresh empty database
	migrateLoaded     time.Duration // consensusd migrate on the loaded database (nothing to apply)
	sizeBefore        int64         // pg_database_size of the service database before the load
	sizeAfter         int64         // after the load and its VACUUM
	sizeEnd           int64         // at the end of the run
	tables            []tableSize   // the largest tables after the load
	loadBefore, after string        // load average before the load, after the restart
}

type tableSize struct {
	name  string
	total int64 // with its indexes and TOAST
}

const scaleScratchDB = "bench_scale_scratch"

// scalePhase loads the scale rooms into the service database, then restarts
// consensusd on it, timing each step. consensusd is stopped during the load
// (the load is the database's own work) and started again with the same
// ports, operator token and token key.
func (b *bench) scalePhase(ctx context.Context, bin string) error {
	cfg := b.cfg
	sr := &scaleRun{spec: fullScale(cfg.ScaleAgreements), loadBefore: loadAvg()}
	b.scale = sr
	sr.startEmpty = b.svcStart
	sr.spec.Origin, sr.spec.TokenKey, sr.spec.Now = b.svc.origin, b.svc.key, time.Now()
	// One connection per core: each generates its chunk, then waits for
	// PostgreSQL, whose work (index entries and foreign-key checks per row)
	// is most of the load; on 2 cores, 4 connections loaded less than 2.
	sr.spec.Workers = max(2, runtime.NumCPU())

	cfg.logf("== scale: consensusd migrate on a fresh empty database")
	if _, err := b.cl.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+scaleScratchDB+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := b.cl.admin.Exec(ctx, "CREATE DATABASE "+scaleScratchDB+" OWNER "+b.cl.appUser); err != nil {
		return err
	}
	var err error
	if sr.migrateEmpty, err = migrateOnce(ctx, bin, b.cl.appURL(scaleScratchDB)); err != nil {
		return err
	}
	if _, err := b.cl.admin.Exec(ctx, "DROP DATABASE "+scaleScratchDB+" WITH (FORCE)"); err != nil {
		return err
	}
	cfg.logf("   %s", sr.migrateEmpty.Round(time.Millisecond))

	if sr.sizeBefore, err = b.cl.databaseSize(ctx); err != nil {
		return err
	}
	cfg.logf("== scale: stopping consensusd; loading %s with %d COPY connections (load average %s)", sr.spec.summary(), sr.spec.Workers, sr.loadBefore)
	b.svc.stop()
	if sr.load, err = loadScale(ctx, b.cl.appURL(serviceDB), sr.spec, cfg.Stdout); err != nil {
		return err
	}
	cfg.logf("== scale: VACUUM (ANALYZE) and CHECKPOINT")
	admin, err := pgx.Connect(ctx, b.cl.url(serviceDB))
	if err != nil {
		return err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	t := time.Now()
	if _, err := admin.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("VACUUM (ANALYZE): %w", err)
	}
	sr.vacuum = time.Since(t)
	if err := b.cl.checkpoint(ctx); err != nil {
		return err
	}
	if sr.sizeAfter, err = b.cl.databaseSize(ctx); err != nil {
		return err
	}
	rows, err := admin.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname = current_schema() ORDER BY 2 DESC LIMIT 5`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var ts tableSize
		if err := rows.Scan(&ts.name, &ts.total); err != nil {
			return err
		}
		sr.tables = append(sr.tables, ts)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	cfg.logf("   %s in %s; database %s", sr.vacuum.Round(100*time.Millisecond), serviceDB, bytesText(sr.sizeAfter))

	cfg.logf("== scale: consensusd migrate on the loaded database")
	if sr.migrateLoaded, err = migrateOnce(ctx, bin, b.cl.appURL(serviceDB)); err != nil {
		return err
	}
	cfg.logf("   %s", sr.migrateLoaded.Round(time.Millisecond))
	cfg.logf("== scale: starting consensusd on the loaded database")
	t = time.Now()
	if b.svc, err = startService(ctx, cfg, bin, b.cl, b.svc, nil); err != nil {
		return err
	}
	sr.startLoaded = time.Since(t)
	sr.after = loadAvg()
	cfg.logf("   ready in %s (on the empty database: %s)", sr.startLoaded.Round(time.Millisecond), sr.startEmpty.Round(time.Millisecond))
	return nil
}

// migrateOnce runs `consensusd migrate` against dbURL and returns how long
// the process took, start to exit.
func migrateOnce(ctx context.Context, bin, dbURL string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, "migrate")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "DATABASE_URL=" + dbURL}
	t := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(t)
	if err != nil {
		return 0, fmt.Errorf("consensusd migrate: %w: %.500s", err, out)
	}
	return took, nil
}

func (c *cluster) databaseSize(ctx context.Context) (int64, error) {
	var n int64
	err := c.admin.QueryRow(ctx, "SELECT pg_database_size($1)", serviceDB).Scan(&n)
	return n, err
}

// bytesText is n in MiB or GiB.
func bytesText(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// ratioRow is one row of a ratio table as written in results.md.
type ratioRow struct {
	check      string
	rate, cost string // the cells as written
	rateMed    float64
	costMed    float64
	hasRate    bool
	hasCost    bool
}

// parseRatioTable reads the rows of the first ratio table in md (the table
// under "## Ratios against the targets", or a bare table as ratioTable
// prints it): check name, rate ratio and CPU-cost ratio, each median
// parsed where it is a number.
func parseRatioTable(md string) []ratioRow {
	var out []ratioRow
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| check |") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 7 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		r := ratioRow{check: strings.TrimSpace(cells[0]), rate: strings.TrimSpace(cells[3]), cost: strings.TrimSpace(cells[4])}
		r.rateMed, r.hasRate = leadingFloat(r.rate)
		r.costMed, r.hasCost = leadingFloat(r.cost)
		out = append(out, r)
	}
	return out
}

func leadingFloat(s string) (float64, bool) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, false
	}
	x, err := strconv.ParseFloat(f[0], 64)
	return x, err == nil
}

// scaleTolerance: a ratio at scale is within 10% of the small database's
// when it is at least 0.9 times it (a higher ratio at scale passes).
const scaleTolerance = 0.9

// scaleComparison is the table of every ratio of the scale run beside the
// same check's ratio on the small database.
func scaleComparison(small, large []ratioRow) string {
	var sb strings.Builder
	sb.WriteString("| check | small database | at scale | at scale ÷ small | CPU-cost ratio: small, at scale | within 10% |\n")
	sb.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	bySmall := map[string]ratioRow{}
	for _, r := range small {
		bySmall[r.check] = r
	}
	for _, l := range large {
		if !l.hasRate {
			continue
		}
		s, ok := bySmall[l.check]
		change, verdict := "", "no small-database figure"
		if ok && s.hasRate && s.rateMed > 0 {
			q := l.rateMed / s.rateMed
			change = fmt.Sprintf("%.2f", q)
			verdict = "no"
			if q >= scaleTolerance {
				verdict = "yes"
			}
		}
		cost := ""
		if ok && (s.hasCost || l.hasCost) {
			cost = orDash(s.cost) + ", " + orDash(l.cost)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", l.check, orDash(s.rate), l.rate, change, cost, verdict)
	}
	return sb.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// scaleHeading starts the section a scale run writes into results.md; a
// later scale run replaces it, a run on the small database keeps it.
const scaleHeading = "## At scale (`BENCH_SCALE=1`)"

// scaleSection is the scale run's section of results.md: what was loaded
// and how long it took, consensusd's start-up and migrations on it, and
// each ratio beside the small database's.
func (b *bench) scaleSection(smallMD string, r report) string {
	cfg, sr, m := b.cfg, b.scale, b.meta
	var md strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&md, format+"\n", args...) }
	commit := m.commit
	if m.dirty {
		commit += " with uncommitted changes"
	}
	w("%s", scaleHeading)
	w("")
	w("The same loads as above, run after %s were written into the service's own tables. Written by `make bench BENCH_SCALE=1`, which leaves the rest of this file as the last run on the small database wrote it.", sr.spec.summary())
	w("")
	w("- **Date:** %s (took %s)", m.started.UTC().Format("2006-01-02 15:04 MST"), m.elapsed.Round(time.Second))
	w("- **Commit:** %s", commit)
	w("- **Command:** `%s`", cfg.Invocation)
	w("- **Load average:** %s before the run, %s before the scale load, %s after the restart, %s after the run (%d cores)", m.loadBefore, sr.loadBefore, sr.after, m.loadAfter, m.cores)
	w("- **Loaded:** %s; %d participants and %d events per room (every participant claimed, comments and questions, pending, deadline 30 days ahead), rooms dealt to the workspaces in turn (the bench's own, `default`, among them); each event with its command digest and chain link as the service computes them", sr.spec.summary(), sr.spec.Parts, sr.spec.Events)
	w("- **Load time:** %s for %s rows (%s rows/s): %d connections, each a transaction of %d rooms at a time, COPY into temporary tables then `INSERT … SELECT` into the service's tables as the service's role (row-level security refuses COPY into its tables), with every index, constraint, foreign key and trigger of the migrations in place (the connections' time: %s); then `VACUUM (ANALYZE)` %s", sr.load.Took.Round(100*time.Millisecond), thousands(float64(sr.load.Rows)), thousands(float64(sr.load.Rows)/sr.load.Took.Seconds()), sr.spec.Workers, sr.spec.Chunk, sr.load.Split, sr.vacuum.Round(100*time.Millisecond))
	var ts []string
	for _, t := range sr.tables {
		ts = append(ts, fmt.Sprintf("%s %s", t.name, bytesText(t.total)))
	}
	w("- **Database size** (`pg_database_size`): %s before the load, %s after it, %s at the end of the run; largest tables with their indexes: %s", bytesText(sr.sizeBefore), bytesText(sr.sizeAfter), bytesText(sr.sizeEnd), strings.Join(ts, ", "))
	w("- **consensusd start-up** (process start to `/api/health` 200, polled every 100 ms): %s on the loaded database, every migration already applied; %s on the empty database, which it migrated from scratch", sr.startLoaded.Round(time.Millisecond), sr.startEmpty.Round(time.Millisecond))
	w("- **Migrations** (`consensusd migrate`, process start to exit): %s on the loaded database (nothing to apply: River's and goose's version checks under the advisory lock); %s on a fresh empty database (every migration). No migration ran on loaded rows: a migration added later would, and its time on this database is the figure to watch", sr.migrateLoaded.Round(time.Millisecond), sr.migrateEmpty.Round(time.Millisecond))
	w("")
	smallRun, smallCommit := "(no run on the small database in this file)", ""
	for _, line := range strings.Split(smallMD, "\n") {
		if v, ok := strings.CutPrefix(line, "- **Date:** "); ok && smallCommit == "" {
			smallRun = "the run of " + v
		}
		if v, ok := strings.CutPrefix(line, "- **Commit:** "); ok && smallCommit == "" {
			smallCommit = v
		}
	}
	if smallCommit != "" && smallCommit != commit {
		smallRun += fmt.Sprintf(", at commit %s: the code changed between the two runs, and those changes move the ratios as much as the database's size may", smallCommit)
	}
	w("Each ratio of the scale run beside the same check's ratio on the small database, from the ratio table above (%s). \"within 10%%\" is met when the ratio at scale is at least %.1f× the small database's; other work on the shared machine moves ratios between two runs too, so compare the CPU-cost ratios as well.", smallRun, scaleTolerance)
	w("")
	md.WriteString(scaleComparison(parseRatioTable(smallMD), parseRatioTable(r.ratioTable)))
	w("")
	w("### The scale run's ratio table")
	w("")
	md.WriteString(r.ratioTable)
	return md.String()
}

// withScaleSection returns results.md's text old with section in place of
// its previous scale section, or appended when it has none.
func withScaleSection(old, section string) string {
	before, _, found := strings.Cut(old, scaleHeading)
	if !found {
		return strings.TrimRight(old, "\n") + "\n\n" + section
	}
	rest := old[len(before)+len(scaleHeading):]
	// The section ends at the next second-level heading.
	after := ""
	if i := strings.Index(rest, "\n## "); i >= 0 {
		after = rest[i+1:]
	}
	out := strings.TrimRight(before, "\n") + "\n\n" + section
	if after != "" {
		out = strings.TrimRight(out, "\n") + "\n\n" + after
	}
	return out
}

// keptScaleSection is old's scale section, empty when it has none: a run
// on the small database rewrites results.md and carries it over.
func keptScaleSection(old string) string {
	i := strings.Index(old, scaleHeading)
	if i < 0 {
		return ""
	}
	rest := old[i:]
	if j := strings.Index(rest[len(scaleHeading):], "\n## "); j >= 0 {
		rest = rest[:len(scaleHeading)+j+1]
	}
	return rest
}
