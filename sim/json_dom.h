// A JSON DOM builder on nlohmann::json's SAX interface, with a key filter and the path of every
// value, linear in the input. (nlohmann's own callback parser, json::parse(text, callback),
// scans the enclosing container after every closing object -- quadratic in a trace's event
// array -- and skips the end events of containers under a discarded key.)
//
// Subclass hooks, all optional:
//   keep(key)           on each object key; false skips the key and its whole value
//   object_done(obj)    when an object closes (before it is stored): may rewrite it in place
//   path()              the key path of the value being read: "a.b[3].c" ("" at the top)
// parse() throws ParseFailure with the path where the text stopped making sense.
// Header-only; its users link nlohmann_json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace ct::sim {

class JsonDomBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  using json = nlohmann::json;

  struct ParseFailure : std::runtime_error {
    ParseFailure(std::string where_, std::string what_, size_t byte_, bool overflow_)
        : std::runtime_error(what_), where(std::move(where_)), byte(byte_), overflow(overflow_) {}
    std::string where;  // key path ("" at the top level)
    size_t byte;        // position in the text
    bool overflow;      // a number beyond double's range (NaN/Infinity are syntax errors)
  };

  virtual ~JsonDomBuilder() = default;

  // Parses `text` into a DOM; throws ParseFailure (syntax error, number overflow).
  json parse(std::string_view text) {
    root_ = json();
    frames_.clear();
    skipping_ = 0;
    skip_next_ = false;
    if (!json::sax_parse(text, this)) {
      throw ParseFailure(failure_where_, failure_what_, failure_byte_, failure_overflow_);
    }
    return std::move(root_);
  }

  // The key path of the value being read now.
  [[nodiscard]] std::string path() const {
    std::string out;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.node->is_object()) {
        if (!f.key.empty()) out += (out.empty() ? "" : ".") + f.key;
      } else {
        // An open child is the array's last element; otherwise the next one is being read.
        const size_t index = i + 1 < frames_.size() ? f.node->size() - 1 : f.node->size();
        out += "[" + std::to_string(index) + "]";
      }
    }
    return out;
  }
  // Nesting depth of the value being read (0: the top-level value; 1: its members).
  [[nodiscard]] size_t depth() const { return frames_.size(); }

 protected:
  virtual bool keep(const std::string& /*key*/) { return true; }
  virtual void object_done(json& /*obj*/) {}
  // The key under which the current object member is being read ("" outside objects).
  [[nodiscard]] const std::string& current_key() const {
    static const std::string none;
    return frames_.empty() || !frames_.back().node->is_object() ? none : frames_.back().key;
  }
  // The key being read in the open object at `level` ("" when that container is an array).
  [[nodiscard]] const std::string& key_at(size_t level) const {
    static const std::string none;
    return level < frames_.size() && frames_[level].node->is_object() ? frames_[level].key : none;
  }
  // The open container at `level` (0: the top-level value); nullptr beyond the open ones.
  [[nodiscard]] const json* container(size_t level) const {
    return level < frames_.size() ? frames_[level].node : nullptr;
  }
  // The current object being filled (nullptr when the current container is an array).
  [[nodiscard]] const json* current_object() const {
    return frames_.empty() || !frames_.back().node->is_object() ? nullptr : frames_.back().node;
  }

 private:
  struct Frame {
    json* node;
    std::string key;
    bool has_key = false;
  };

  // Stores a finished value in its container (or as the root); returns where it lives.
  json* store(json&& value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      f.node->push_back(std::move(value));
      return &f.node->back();
    }
    json& slot = (*f.node)[f.key];
    slot = std::move(value);
    f.has_key = false;
    return &slot;
  }

  bool value(json&& v) {
    if (skipping_ > 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    store(std::move(v));
    return true;
  }

  bool open(json&& empty) {
    if (skipping_ > 0) {
      ++skipping_;
      return true;
    }
    if (skip_next_) {
      skip_next_ = false;
      skipping_ = 1;
      return true;
    }
    json* node = store(std::move(empty));
    frames_.push_back({node, {}, false});
    return true;
  }

  bool close(bool object) {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    json* node = frames_.back().node;
    frames_.pop_back();
    if (object) object_done(*node);
    return true;
  }

 public:
  // json_sax interface.
  bool null() override { return value(json(nullptr)); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return value(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(json(v)); }
  bool string(string_t& v) override { return value(json(std::move(v))); }
  bool binary(binary_t& v) override { return value(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool end_object() override { return close(true); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override { return close(false); }
  bool key(string_t& k) override {
    if (skipping_ > 0) return true;
    Frame& f = frames_.back();
    f.key = k;
    f.has_key = true;
    if (!keep(f.key)) skip_next_ = true;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    failure_where_ = path();
    failure_what_ = ex.what();
    failure_byte_ = position;
    failure_overflow_ = ex.id == 406;
    return false;
  }

 private:
  json root_;
  std::vector<Frame> frames_;
  int64_t skipping_ = 0;
  bool skip_next_ = false;
  std::string failure_where_, failure_what_;
  size_t failure_byte_ = 0;
  bool failure_overflow_ = false;
};

}  // namespace ct::sim
