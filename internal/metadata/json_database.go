package metadata

import (
	"github.com/stromdb/strom/internal/ferr"
)

// JSON form of a database descriptor (Java DatabaseDescriptorJsonSerde):
//
//	{"version": 1, ["comment": "..."], "custom_properties": {...}}

const databaseJSONVersion = 1

// JSON returns the Fluss JSON form of d, as carried in database_json.
func (d DatabaseDescriptor) JSON() []byte {
	w := jsonWriter{}
	w.beginObject()
	w.numField("version", databaseJSONVersion)
	if d.HasComment {
		w.strField("comment", d.Comment)
	}
	w.strMap("custom_properties", d.CustomProperties)
	w.endObject()
	return w.buf
}

// ParseDatabaseDescriptor decodes database_json. Empty input (a CREATE_DATABASE without
// database_json) yields an empty descriptor. "custom_properties" is required, as in Java.
// Failures are *ferr.Error with code INVALID_DATABASE_EXCEPTION (16); a Java coordinator
// answers UNKNOWN_SERVER_ERROR there, which tells the client less.
func ParseDatabaseDescriptor(data []byte) (DatabaseDescriptor, error) {
	d := DatabaseDescriptor{CustomProperties: map[string]string{}}
	if len(data) == 0 {
		return d, nil
	}
	fail := func(err error) (DatabaseDescriptor, error) {
		return DatabaseDescriptor{}, ferr.New(ferr.InvalidDatabaseException,
			"Failed to parse database descriptor: %s", err.Error())
	}
	obj, err := decodeJSONObject(data)
	if err != nil {
		return fail(err)
	}
	if v, ok := field(obj, "comment"); ok {
		if d.Comment, err = asString("comment", v); err != nil {
			return fail(err)
		}
		d.HasComment = true
	}
	v, err := collectionField(obj, "custom_properties")
	if err != nil {
		return fail(err)
	}
	if d.CustomProperties, err = stringMap("custom_properties", v); err != nil {
		return fail(err)
	}
	return d, nil
}
