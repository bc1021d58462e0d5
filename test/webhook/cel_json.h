// A JSON document as the plain data cel/data.h evaluates, the way kube-apiserver hands
// an admission request to matchConditions (objects as maps, arrays as lists).
#ifndef GPU_TENANCY_TEST_WEBHOOK_CEL_JSON_H_
#define GPU_TENANCY_TEST_WEBHOOK_CEL_JSON_H_

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cel/data.h"
#include "rapidjson/document.h"

namespace webhook_test {

// Numbers that are not whole become strings: no Kubernetes field the conditions read is one.
inline cel::CelData ToCelData(const rapidjson::Value& v) {
  using cel::CelData;
  if (v.IsNull()) return CelData::Null();
  if (v.IsBool()) return CelData::Bool(v.GetBool());
  if (v.IsInt64()) return CelData::Int(v.GetInt64());
  if (v.IsNumber()) return CelData::String(std::to_string(v.GetDouble()));
  if (v.IsString()) return CelData::String(std::string(v.GetString(), v.GetStringLength()));
  if (v.IsArray()) {
    std::vector<CelData> items;
    for (const rapidjson::Value& item : v.GetArray()) items.push_back(ToCelData(item));
    return CelData::List(std::move(items));
  }
  std::vector<std::pair<std::string, CelData>> entries;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    entries.emplace_back(std::string(it->name.GetString(), it->name.GetStringLength()),
                         ToCelData(it->value));
  }
  return CelData::Map(std::move(entries));
}

}  // namespace webhook_test

#endif  // GPU_TENANCY_TEST_WEBHOOK_CEL_JSON_H_
