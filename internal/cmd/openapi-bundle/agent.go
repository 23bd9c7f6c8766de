package main

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// agentDocument derives /openapi-agent.json from the full document: only
// what an invited participant calls (every operation tagged agent, and the
// capabilities and health documents its guide says to check first), with
// only the components those operations reach. A client or tool set
// generated from it cannot offer an operator route to an invited agent.
func agentDocument(full *yaml.Node) (*yaml.Node, error) {
	doc := deepCopy(full)
	paths := child(doc, "paths")
	if paths == nil {
		return nil, fmt.Errorf("paths is missing")
	}
	kept := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i < len(paths.Content); i += 2 {
		item := paths.Content[i+1]
		out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		ops := 0
		for j := 0; j < len(item.Content); j += 2 {
			k, v := item.Content[j], item.Content[j+1]
			if !isMethod(k.Value) {
				out.Content = append(out.Content, k, v)
				continue
			}
			if forParticipant(v) {
				out.Content = append(out.Content, k, v)
				ops++
			}
		}
		if ops > 0 {
			kept.Content = append(kept.Content, paths.Content[i], out)
		}
	}
	paths.Content = kept.Content
	if err := retitle(doc); err != nil {
		return nil, err
	}
	pruneTags(doc)
	pruneComponents(doc)
	return doc, nil
}

// participantDiscovery are the operations outside the agent tag that an
// invited participant is told to call before participating.
var participantDiscovery = map[string]bool{"getCapabilities": true, "getHealth": true}

func forParticipant(op *yaml.Node) bool {
	if id := child(op, "operationId"); id != nil && participantDiscovery[id.Value] {
		return true
	}
	for _, t := range seq(child(op, "tags")) {
		if t.Value == "agent" {
			return true
		}
	}
	return false
}

func isMethod(k string) bool {
	switch k {
	case "get", "put", "post", "delete", "options", "head", "patch", "trace":
		return true
	}
	return false
}

func seq(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// retitle says in info which document this is and where the full one is.
func retitle(doc *yaml.Node) error {
	info := child(doc, "info")
	title, desc := child(info, "title"), child(info, "description")
	if title == nil || desc == nil {
		return fmt.Errorf("info.title and info.description are required")
	}
	title.Value += " for invited participants"
	desc.Value = "This is the part of the Consensus API that an invited participant calls: " +
		"exchange, claim, room, events and artifact, and the capabilities and health documents to check " +
		"first. It leaves out the operator routes and the other public documents; the complete contract " +
		"is " + schemaOrigin + "/openapi.json.\n\n" + desc.Value
	desc.Style = 0
	return nil
}

// pruneTags keeps the tags some remaining operation uses.
func pruneTags(doc *yaml.Node) {
	used := map[string]bool{}
	for _, op := range operations(doc) {
		for _, t := range seq(child(op, "tags")) {
			used[t.Value] = true
		}
	}
	tags := child(doc, "tags")
	if tags == nil {
		return
	}
	var out []*yaml.Node
	for _, t := range tags.Content {
		if n := child(t, "name"); n != nil && used[n.Value] {
			out = append(out, t)
		}
	}
	tags.Content = out
}

func operations(doc *yaml.Node) []*yaml.Node {
	var ops []*yaml.Node
	paths := child(doc, "paths")
	for i := 1; paths != nil && i < len(paths.Content); i += 2 {
		item := paths.Content[i]
		for j := 0; j < len(item.Content); j += 2 {
			if isMethod(item.Content[j].Value) {
				ops = append(ops, item.Content[j+1])
			}
		}
	}
	return ops
}

// pruneComponents removes every component that nothing outside
// components reaches, directly or through other components. Security
// schemes are reached by name from security requirements.
func pruneComponents(doc *yaml.Node) {
	comps := child(doc, "components")
	if comps == nil {
		return
	}
	reached := map[string]bool{}
	var visit func(n *yaml.Node)
	visit = func(n *yaml.Node) {
		_ = walkRefs(n, func(ref *yaml.Node) error {
			name, ok := strings.CutPrefix(ref.Value, "#/components/")
			if !ok || reached[name] {
				return nil
			}
			reached[name] = true
			kind, key, _ := strings.Cut(name, "/")
			visit(child(child(comps, kind), key))
			return nil
		})
	}
	for i := 0; i < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "components" {
			visit(doc.Content[i+1])
		}
	}
	for _, op := range operations(doc) {
		for _, req := range seq(child(op, "security")) {
			for j := 0; j < len(req.Content); j += 2 {
				reached["securitySchemes/"+req.Content[j].Value] = true
			}
		}
	}
	for i := 0; i < len(comps.Content); i += 2 {
		kind := comps.Content[i].Value
		group := comps.Content[i+1]
		var out []*yaml.Node
		for j := 0; j < len(group.Content); j += 2 {
			if reached[kind+"/"+group.Content[j].Value] {
				out = append(out, group.Content[j], group.Content[j+1])
			}
		}
		group.Content = out
	}
	var out []*yaml.Node
	for i := 0; i < len(comps.Content); i += 2 {
		if len(comps.Content[i+1].Content) > 0 {
			out = append(out, comps.Content[i], comps.Content[i+1])
		}
	}
	comps.Content = out
}
