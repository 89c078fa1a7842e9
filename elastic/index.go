package elastic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Index is a search read model: the alias its projection writes and its
// searches read, and the body that creates each index behind the alias
// (EnsureIndex creates "<Alias>-000001", Reindex "<Alias>-<timestamp>").
type Index struct {
	// Alias is the alias written (with require_alias) and read: a valid
	// Elasticsearch index name (lowercase; none of \ / * ? " < > | , # :
	// or space; not starting with -, _ or +). Required.
	Alias string
	// Body is the create-index request body, a JSON object:
	// {"mappings": {...}, "settings": {...}}. Give an explicit mapping,
	// preferably "dynamic": "strict", so a document that does not fit is a
	// mapping_error (dead-lettered with its reason) instead of a guessed
	// field type, and map the tombstone fields: FieldDeleted as boolean,
	// FieldDeletedAt as date. Required.
	Body []byte
}

// Validate checks idx; errors name the field.
func (idx Index) Validate() error {
	if err := checkIndexName(idx.Alias); err != nil {
		return fmt.Errorf("elastic: Index.Alias: %w", err)
	}
	var obj map[string]json.RawMessage
	if len(bytes.TrimSpace(idx.Body)) == 0 {
		return fmt.Errorf("elastic: Index.Body (index %s): required, a create-index body with the mapping", idx.Alias)
	}
	if err := json.Unmarshal(idx.Body, &obj); err != nil {
		return fmt.Errorf("elastic: Index.Body (index %s): not a JSON object: %w", idx.Alias, err)
	}
	return nil
}

// checkIndexName applies Elasticsearch's rules for index and alias names.
func checkIndexName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("required")
	case len(name) > 255:
		return fmt.Errorf("%q is longer than 255 bytes", name)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a valid index name", name)
	case strings.ToLower(name) != name:
		return fmt.Errorf("%q must be lowercase", name)
	case strings.ContainsAny(name[:1], "-_+"):
		return fmt.Errorf("%q must not start with -, _ or +", name)
	case strings.ContainsAny(name, `\/*?"<>|,#: `):
		return fmt.Errorf("%q contains one of \\ / * ? \" < > | , # : or space", name)
	}
	return nil
}
