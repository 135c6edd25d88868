package metadata

import (
	"strconv"
	"strings"

	"github.com/stromdb/strom/internal/ferr"
)

// MaxNameLength is the longest database name, table name or partition value Fluss accepts.
const MaxNameLength = 200

// InternalNamePrefix starts names reserved for Fluss itself; user databases, tables and
// partition values may not start with it.
const InternalNamePrefix = "__"

// DetectInvalidName returns why s is not a valid database name, table name or partition
// value — empty, "." or "..", longer than 200 characters, or containing characters other than
// ASCII letters, digits, '_' and '-' — or "" when it is valid. The wording is Java's
// TablePath.detectInvalidName.
func DetectInvalidName(s string) string {
	switch {
	case s == "":
		return "the empty string is not allowed"
	case s == ".":
		return "'.' is not allowed"
	case s == "..":
		return "'..' is not allowed"
	case utf16Len(s) > MaxNameLength:
		return "the length of '" + s + "' is longer than the max allowed length " + strconv.Itoa(MaxNameLength)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "'" + s + "' contains one or more characters other than ASCII alphanumerics, '_' and '-'"
		}
	}
	return ""
}

// reservedPrefixReason returns Java's message for names starting with "__", or "".
func reservedPrefixReason(s string) string {
	if strings.HasPrefix(s, InternalNamePrefix) {
		return "'" + InternalNamePrefix + "' is not allowed as prefix, since it is reserved for internal " +
			"databases/internal tables/internal partitions in Fluss server"
	}
	return ""
}

// ValidateDatabaseName checks a database name for CREATE_DATABASE/CREATE_TABLE. A violation
// is a *ferr.Error with code INVALID_DATABASE_EXCEPTION (16).
func ValidateDatabaseName(name string) error {
	reason := DetectInvalidName(name)
	if reason == "" {
		reason = reservedPrefixReason(name)
	}
	if reason != "" {
		return ferr.New(ferr.InvalidDatabaseException, "Database name %s is invalid: %s", name, reason)
	}
	return nil
}

// ValidateTableName checks a table name for CREATE_TABLE. A violation is a *ferr.Error with
// code INVALID_TABLE_EXCEPTION (15).
func ValidateTableName(name string) error {
	reason := DetectInvalidName(name)
	if reason == "" {
		reason = reservedPrefixReason(name)
	}
	if reason != "" {
		return ferr.New(ferr.InvalidTableException, "Table name %s is invalid: %s", name, reason)
	}
	return nil
}

// ValidateTablePath validates the database part (code 16) and then the table part (code 15),
// as Java's TablePath.validate.
func ValidateTablePath(database, table string) error {
	if err := ValidateDatabaseName(database); err != nil {
		return err
	}
	return ValidateTableName(table)
}

// utf16Len is the length of s in UTF-16 code units, Java's String.length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r > 0xFFFF {
			n += 2
		} else {
			n++
		}
	}
	return n
}
