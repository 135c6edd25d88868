# Cross-check helper for pyarrow_test.go: validates Go-written Arrow messages with pyarrow and
# writes pyarrow-encoded messages for Go to read. Usage: python pyarrow_check.py DIR
import os
import sys

import pyarrow as pa

d = sys.argv[1]
schema = pa.ipc.read_schema(pa.py_buffer(open(os.path.join(d, "schema.bin"), "rb").read()))
for name in sorted(os.listdir(d)):
    if not name.startswith("go_"):
        continue
    buf = open(os.path.join(d, name), "rb").read()
    s = schema
    if name.startswith("go_proj_"):
        idx = [int(x) for x in name[: -len(".bin")].split("-")[1:]]
        s = pa.schema([schema.field(i) for i in idx])
    batch = pa.ipc.read_record_batch(pa.py_buffer(buf), s)
    batch.validate(full=True)
    print(name, batch.num_rows, batch.column(0).to_pylist()[:3])

# pyarrow-written messages (Arrow C++ writer) for Go to decode.
full = pa.ipc.read_record_batch(pa.py_buffer(open(os.path.join(d, "go_NONE.bin"), "rb").read()), schema)
for codec in (None, "zstd", "lz4"):
    opts = pa.ipc.IpcWriteOptions(compression=codec)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=opts) as w:
        w.write_batch(full)
    stream = sink.getvalue().to_pybytes()
    reader = pa.ipc.MessageReader.open_stream(pa.py_buffer(stream))
    reader.read_next_message()  # schema
    msg = reader.read_next_message()
    out = msg.serialize().to_pybytes()
    open(os.path.join(d, "py_%s.bin" % (codec or "none")), "wb").write(out)
print("ok")
