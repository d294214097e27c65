// File reading shared by the trace importers: whole files, gzip detected by its magic bytes
// (1f 8b) and inflated with zlib. Errors are TraceErrors "<key>: <path>: <problem>".
#pragma once

#include <string>

namespace ct::trace::detail {

// Reads the whole file; throws TraceError "<key>: <path>: no such file" / "cannot read".
std::string read_file(const std::string& path, const std::string& key);
// Reads the file and inflates it when it starts with the gzip magic. A name ending in ".gz"
// that is not gzip, or a gzip stream that is corrupt or truncated, throws TraceError.
std::string read_maybe_gzip(const std::string& path, const std::string& key);

}  // namespace ct::trace::detail
