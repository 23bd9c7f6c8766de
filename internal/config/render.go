package config

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// plain drops the Markdown backquotes of a table text for a terminal.
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

// WriteHelp writes the settings table as `consensusd --help` shows it.
func WriteHelp(w io.Writer) error {
	var b strings.Builder
	b.WriteString("Settings (environment variables; a secret may instead be read from the file\nthat NAME_FILE names; `consensusd config check` shows the effective values):\n")
	for _, s := range settings {
		fmt.Fprintf(&b, "\n  %s\n", s.Name)
		status := "default: " + s.DefaultDoc()
		switch s.DefaultDoc() {
		case "required":
			status = "required"
		case "none":
			status = "optional"
		}
		if s.Secret {
			status += "; secret: or " + s.FileVariant() + "=/path/to/file"
		}
		fmt.Fprintf(&b, "      %s\n", status)
		for _, line := range wrap(plain(s.Doc), 72) {
			fmt.Fprintf(&b, "      %s\n", line)
		}
	}
	_, err := io.WriteString(w, plain(b.String()))
	return err
}

// wrap breaks s into lines of at most width characters at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Markdown renders docs/configuration.md from the settings table.
func Markdown() []byte {
	var b bytes.Buffer
	b.WriteString("<!-- Generated from the settings table in internal/config by `make generate`; do not edit. -->\n\n")
	b.WriteString("# Configuration\n\n")
	b.WriteString("`consensusd` reads every setting from the environment. A secret may instead be read from a\n")
	b.WriteString("file: set `NAME_FILE=/path` (not both). `consensusd --help` lists the same table;\n")
	b.WriteString("`consensusd config check` prints the effective configuration with secrets masked and exits\n")
	b.WriteString("non-zero, naming the setting, when one is wrong. The service refuses to start in that case.\n\n")
	b.WriteString("| variable | default | secret | what it does |\n| --- | --- | --- | --- |\n")
	for _, s := range settings {
		secret := ""
		if s.Secret {
			secret = "yes; or `" + s.FileVariant() + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Name, s.DefaultDoc(), secret, strings.ReplaceAll(s.Doc, "|", `\|`))
	}
	return b.Bytes()
}

// Write prints the report as a table: setting, effective value, source.
func (r Report) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tSOURCE")
	for _, e := range r {
		src := string(e.Source)
		if e.Source == SourceFile {
			src = e.Setting.FileVariant() + "=" + e.File
		}
		if e.Err != nil {
			src += " (invalid)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Setting.Name, e.Value, src)
	}
	return tw.Flush()
}
