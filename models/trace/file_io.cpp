// Whole-file reads and gzip inflation (zlib, gzip header auto-detected) for the importers.
#include "models/trace/file_io.h"

#include <zlib.h>

#include <filesystem>

#include "models/trace/trace_import.h"
#include "sim/input_limits.h"

namespace ct::trace::detail {

std::string read_file(const std::string& path, const std::string& key, const std::string& limit) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw TraceError(key + ": " + path + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    throw TraceError(key + ": " + path + ": is a directory, expected a file");
  try {
    return sim::read_bounded(path, limit, key + ": " + path);
  } catch (const std::exception& e) {
    throw TraceError(e.what());
  }
}

std::string read_maybe_gzip(const std::string& path, const std::string& key, const std::string& limit) {
  std::string raw = read_file(path, key, limit);
  const int64_t max_bytes = sim::input_limit(limit);
  const bool gz = raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f &&
                  static_cast<unsigned char>(raw[1]) == 0x8b;
  if (!gz) {
    if (path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
      throw TraceError(key + ": " + path + ": not a gzip file (no gzip magic bytes)");
    }
    return raw;
  }
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw TraceError(key + ": " + path + ": zlib init failed");
  zs.next_in = reinterpret_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string why = rc == Z_BUF_ERROR ? "truncated" : (zs.msg != nullptr ? zs.msg : "corrupt");
      inflateEnd(&zs);
      throw TraceError(key + ": " + path + ": corrupt gzip stream (" + why + ")");
    }
    // Inflation is bounded as it goes: a small file that expands without end stops here.
    if (static_cast<int64_t>(out.size() + (sizeof(buf) - zs.avail_out)) > max_bytes) {
      inflateEnd(&zs);
      try {
        sim::input_limit_exceeded(limit, key + ": " + path + " (inflated)",
                                  static_cast<int64_t>(out.size() + (sizeof(buf) - zs.avail_out)), true);
      } catch (const sim::InputLimitError& e) {
        throw TraceError(e.what());
      }
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace ct::trace::detail
