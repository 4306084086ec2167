package format

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// CSVFromJSON writes JSON as CSV: an object becomes one row, an array of
// objects one row each, under a header row. The header is header when given,
// else the first object's keys in the order they appear. A string value is
// written as it is, a number as its JSON literal, true and false as words,
// null as an empty field, and an object or array as its compact JSON text.
// A key that is not in the header is an error, not silently dropped; a
// missing key is an empty field. Rows end with "\n".
func CSVFromJSON(data []byte, header []string) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return nil, fmt.Errorf("format: csv output: the value is not JSON: %w", err)
	}
	var objects [][]pair
	switch tok {
	case json.Delim('{'):
		o, err := readObject(d)
		if err != nil {
			return nil, fmt.Errorf("format: csv output: %w", err)
		}
		objects = append(objects, o)
	case json.Delim('['):
		for d.More() {
			t, err := d.Token()
			if err != nil {
				return nil, fmt.Errorf("format: csv output: %w", err)
			}
			if t != json.Delim('{') {
				return nil, fmt.Errorf("format: csv output: item %d of the array is not an object", len(objects)+1)
			}
			o, err := readObject(d)
			if err != nil {
				return nil, fmt.Errorf("format: csv output: item %d: %w", len(objects)+1, err)
			}
			objects = append(objects, o)
		}
		if _, err := d.Token(); err != nil {
			return nil, fmt.Errorf("format: csv output: %w", err)
		}
	default:
		return nil, errors.New("format: csv output: the value must be an object or an array of objects")
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("format: csv output: more data after the JSON value")
	}
	if header == nil {
		if len(objects) == 0 {
			return nil, errors.New("format: csv output: an empty array has no header; give the columns")
		}
		for _, p := range objects[0] {
			header = append(header, p.key)
		}
	}
	if err := checkHeader(header); err != nil {
		return nil, fmt.Errorf("format: csv output: %w", err)
	}
	col := make(map[string]int, len(header))
	for i, h := range header {
		col[h] = i
	}
	var out bytes.Buffer
	w := csv.NewWriter(&out)
	_ = w.Write(header)
	for n, o := range objects {
		row := make([]string, len(header))
		for _, p := range o {
			i, ok := col[p.key]
			if !ok {
				return nil, fmt.Errorf("format: csv output: row %d has the key %q, which is not a column (%s)", n+1, p.key, strings.Join(header, ", "))
			}
			row[i] = p.value
		}
		_ = w.Write(row)
	}
	w.Flush()
	return out.Bytes(), w.Error()
}

type pair struct{ key, value string }

// readObject reads an object's members after its '{', keeping their order;
// a repeated key keeps its last value, as JSON.parse does.
func readObject(d *json.Decoder) (out []pair, err error) {
	defer func() {
		if err == io.EOF {
			err = errors.New("the JSON value is cut short")
		}
	}()
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string) // the decoder only gives string keys here
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil, err
		}
		v, err := cellText(raw)
		if err != nil {
			return nil, err
		}
		replaced := false
		for i := range out {
			if out[i].key == key {
				out[i].value, replaced = v, true
			}
		}
		if !replaced {
			out = append(out, pair{key, v})
		}
	}
	_, err = d.Token() // '}'
	return out, err
}

func cellText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "", nil
	case raw[0] == '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case string(raw) == "null":
		return "", nil
	case raw[0] == '{' || raw[0] == '[':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return string(raw), nil
}
