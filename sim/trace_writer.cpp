#include "sim/trace_writer.h"

#include <cstdio>

namespace ct::sim {
namespace {

void write_escaped(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char c : s) {
    switch (c) {
      case '"':
        out << "\\\"";
        break;
      case '\\':
        out << "\\\\";
        break;
      case '\n':
        out << "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out << buf;
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

void write_us(std::ostream& out, int64_t ps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(ps) * 1e-6);
  out << buf;
}

}  // namespace

TraceWriter::TraceWriter(std::ostream& out) : out_(out) { out_ << "{\"traceEvents\":[\n"; }

TraceWriter::~TraceWriter() { finish(); }

void TraceWriter::begin_event() {
  if (!first_) out_ << ",\n";
  first_ = false;
}

void TraceWriter::process_name(int pid, std::string_view name) {
  begin_event();
  out_ << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid << ",\"args\":{\"name\":";
  write_escaped(out_, name);
  out_ << "}}";
}

void TraceWriter::thread_name(int pid, int tid, std::string_view name) {
  begin_event();
  out_ << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid << ",\"tid\":" << tid
       << ",\"args\":{\"name\":";
  write_escaped(out_, name);
  out_ << "}}";
}

void TraceWriter::complete(int pid, int tid, std::string_view name, std::string_view category, Time start,
                           Duration duration, std::string_view args_json) {
  begin_event();
  out_ << "{\"ph\":\"X\",\"pid\":" << pid << ",\"tid\":" << tid << ",\"name\":";
  write_escaped(out_, name);
  out_ << ",\"cat\":";
  write_escaped(out_, category);
  out_ << ",\"ts\":";
  write_us(out_, start.ps());
  out_ << ",\"dur\":";
  write_us(out_, duration.count_ps());
  if (!args_json.empty()) out_ << ",\"args\":" << args_json;
  out_ << "}";
}

void TraceWriter::counter(int pid, std::string_view name, Time at,
                          std::initializer_list<std::pair<std::string_view, double>> series) {
  begin_event();
  out_ << "{\"ph\":\"C\",\"pid\":" << pid << ",\"name\":";
  write_escaped(out_, name);
  out_ << ",\"ts\":";
  write_us(out_, at.ps());
  out_ << ",\"args\":{";
  bool first = true;
  for (const auto& [key, value] : series) {
    if (!first) out_ << ",";
    first = false;
    write_escaped(out_, key);
    out_ << ":" << value;
  }
  out_ << "}}";
}

void TraceWriter::flow(char phase, int pid, int tid, std::string_view name, std::string_view category,
                       uint64_t id, Time at) {
  begin_event();
  out_ << "{\"ph\":\"" << phase << "\",\"pid\":" << pid << ",\"tid\":" << tid << ",\"name\":";
  write_escaped(out_, name);
  out_ << ",\"cat\":";
  write_escaped(out_, category);
  out_ << ",\"id\":" << id << ",\"ts\":";
  write_us(out_, at.ps());
  out_ << "}";
}

void TraceWriter::flow_start(int pid, int tid, std::string_view name, std::string_view category, uint64_t id,
                             Time at) {
  flow('s', pid, tid, name, category, id, at);
}

void TraceWriter::flow_end(int pid, int tid, std::string_view name, std::string_view category, uint64_t id,
                           Time at) {
  flow('f', pid, tid, name, category, id, at);
}

void TraceWriter::counter(int pid, std::string_view name, Time at, double value) {
  counter(pid, name, at, {{"value", value}});
}

void TraceWriter::finish() {
  if (finished_) return;
  finished_ = true;
  out_ << "\n],\"displayTimeUnit\":\"ns\"}\n";
  out_.flush();
}

}  // namespace ct::sim
