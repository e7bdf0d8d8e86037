package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"
)

// listPage is the admin lists' envelope (the vault list's).
type listPage struct {
	Skip      int               `json:"skip"`
	Limit     int               `json:"limit"`
	Total     int               `json:"total"`
	Resources []json.RawMessage `json:"resources"`
}

// pageSize is the largest page the admin lists give (API-cli.md: lists
// page by at most 1,000).
const pageSize = 1000

// listAll reads every page of an admin list.
func (c *conn) listAll(ctx context.Context, path string, query url.Values) ([]json.RawMessage, error) {
	var all []json.RawMessage
	if query == nil {
		query = url.Values{}
	}
	for skip := 0; ; {
		query.Set("skip", fmt.Sprint(skip))
		query.Set("limit", fmt.Sprint(pageSize))
		var p listPage
		if err := c.do(ctx, "GET", path+"?"+query.Encode(), nil, &p); err != nil {
			return nil, err
		}
		all = append(all, p.Resources...)
		skip += len(p.Resources)
		if len(p.Resources) == 0 || skip >= p.Total {
			return all, nil
		}
	}
}

// printJSON writes v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTable writes rows under header with text/tabwriter.
func (a *app) printTable(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// printItems prints raw API objects: all of them as one JSON array with
// -o json, else a table of the named fields.
func (a *app) printItems(items []json.RawMessage, header []string, fields []string) error {
	if a.output == "json" {
		if items == nil {
			items = []json.RawMessage{}
		}
		return a.printJSON(items)
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		var m map[string]any
		if err := json.Unmarshal(it, &m); err != nil {
			return err
		}
		row := make([]string, len(fields))
		for i, f := range fields {
			row[i] = cell(m[f])
		}
		rows = append(rows, row)
	}
	return a.printTable(header, rows)
}

// printItem prints one API object: as JSON with -o json, else as a
// two-column table of the named fields.
func (a *app) printItem(item json.RawMessage, fields []string) error {
	if a.output == "json" {
		var v any
		if err := json.Unmarshal(item, &v); err != nil {
			return err
		}
		return a.printJSON(v)
	}
	var m map[string]any
	if err := json.Unmarshal(item, &m); err != nil {
		return err
	}
	rows := make([][]string, 0, len(fields))
	for _, f := range fields {
		if v, ok := m[f]; ok {
			rows = append(rows, []string{f, cell(v)})
		}
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, r[0]+":\t"+r[1])
	}
	return tw.Flush()
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = cell(e)
		}
		return strings.Join(parts, ",")
	case float64:
		return fmt.Sprint(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
