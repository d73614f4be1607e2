// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An insertion-ordered dictionary from names to values, as Python's OrderedDict: the state
// dict (name -> Tensor) and a module's parameters, buffers and children are all one of these.
// Each dictionary knows what it holds ("Parameter", "Buffer", "Submodule", "Key"), so its
// errors read naturally, as LibTorch's do:
//
//   nns::nn::OrderedDict<nns::Tensor> sd("Key");
//   sd.insert("weight", w);
//   sd.insert("weight", w);   // KeyError: Key 'weight' already defined
//   for (const auto& item : sd) std::cout << item.key() << "\n";
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/tensor/error.h"

namespace nns::nn {

template <class V>
class OrderedDict {
 public:
  class Item {
   public:
    Item(std::string key, V value) : key_(std::move(key)), value_(std::move(value)) {}
    const std::string& key() const { return key_; }
    V& value() { return value_; }
    const V& value() const { return value_; }

   private:
    std::string key_;
    V value_;
  };

  explicit OrderedDict(std::string key_description = "Key")
      : key_description_(std::move(key_description)) {}

  const std::string& key_description() const { return key_description_; }

  // Adds a new key at the end; a key that is already there is a KeyError.
  V& insert(const std::string& key, V value) {
    if (index_.count(key)) {
      throw KeyError(key_description_ + " '" + key + "' already defined");
    }
    index_.emplace(key, items_.size());
    items_.emplace_back(key, std::move(value));
    return items_.back().value();
  }
  // Replaces the value of a key in place (keeping its position), or adds it at the end.
  V& insert_or_assign(const std::string& key, V value) {
    if (V* existing = find(key)) {
      *existing = std::move(value);
      return *existing;
    }
    return insert(key, std::move(value));
  }

  V* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  const V* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  bool contains(const std::string& key) const { return index_.count(key) != 0; }

  // The value of key; a missing key is a KeyError naming it.
  V& operator[](const std::string& key) {
    if (V* v = find(key)) return *v;
    throw_missing(key);
  }
  const V& operator[](const std::string& key) const {
    if (const V* v = find(key)) return *v;
    throw_missing(key);
  }

  // Removes key and returns its value; a missing key is a KeyError.
  V pop(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) throw_missing(key);
    const size_t pos = it->second;
    V value = std::move(items_[pos].value());
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(pos));
    index_.erase(it);
    for (auto& [k, i] : index_) {
      if (i > pos) --i;
    }
    return value;
  }

  void clear() {
    items_.clear();
    index_.clear();
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.key());
    return out;
  }
  std::vector<V> values() const {
    std::vector<V> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.value());
    return out;
  }
  const std::vector<Item>& items() const { return items_; }

  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  [[noreturn]] void throw_missing(const std::string& key) const {
    throw KeyError(key_description_ + " '" + key + "' is not defined");
  }

  std::string key_description_;
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace nns::nn
