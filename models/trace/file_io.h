// File reading shared by the trace importers: whole files, gzip detected by its magic bytes
// (1f 8b) and inflated with zlib. Errors are TraceErrors "<key>: <path>: <problem>".
#pragma once

#include <string>

namespace ct::trace::detail {

// Reads the whole file, at most the input limit `limit` (sim/input_limits.h) bytes; throws
// TraceError "<key>: <path>: no such file" / "cannot be opened" / the limit's message.
std::string read_file(const std::string& path, const std::string& key,
                      const std::string& limit = "trace_bytes");
// Reads the file and inflates it when it starts with the gzip magic, both bounded by `limit`
// (inflation stops as soon as the output passes it). A name ending in ".gz" that is not gzip,
// or a gzip stream that is corrupt or truncated, throws TraceError.
std::string read_maybe_gzip(const std::string& path, const std::string& key,
                            const std::string& limit = "trace_bytes");

}  // namespace ct::trace::detail
