// kube::ParseKubeconfig: kubeconfig YAML (current context -> cluster server, CA, TLS server name;
// user token, client certificate and key, inline base64 or files). Invariants: success gives a
// non-empty host and a port in 1..65535, and a client certificate only together with a key.
//
// File references (certificate-authority, client-certificate, client-key) are read at parse
// time. So that fuzzing never reads /dev/zero or blocks on a FIFO, inputs whose file references
// are absolute or climb out of the base directory are skipped; the rest resolve inside a private
// temporary directory holding one small file (ca.crt) that the seeds name.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/json.h"
#include "common/yaml_json.h"
#include "fuzz/fuzz_util.h"
#include "kube/config.h"

namespace {

std::string* base_dir = nullptr;

// True when every file reference stays inside base_dir.
bool FileRefsAreSafe(absl::string_view text) {
  absl::StatusOr<rapidjson::Document> doc = common::YamlToJson(text);
  if (!doc.ok()) return true;  // the parser will refuse it before reading any file
  for (auto [list, inner] : {std::pair<const char*, const char*>{"clusters", "cluster"},
                             std::pair<const char*, const char*>{"users", "user"}}) {
    const common::JsonValue* items = common::FindNonNull(*doc, list);
    if (!items || !items->IsArray()) continue;
    for (const common::JsonValue& item : items->GetArray()) {
      const common::JsonValue* obj = common::FindNonNull(item, inner);
      if (!obj || !obj->IsObject()) continue;
      for (const char* key : {"certificate-authority", "client-certificate", "client-key"}) {
        absl::string_view path = common::StringOr(*obj, key);
        if (path.find('/') != absl::string_view::npos || path == "." || path == "..") {
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char dir[] = "/tmp/gpu-tenancy-fuzz-kubeconfig-XXXXXX";
  if (!mkdtemp(dir)) fuzz::Fail("mkdtemp failed");
  base_dir = new std::string(dir);
  const std::string ca = *base_dir + "/ca.crt";
  if (FILE* f = std::fopen(ca.c_str(), "w")) {
    std::fputs("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", f);
    std::fclose(f);
  }
  std::atexit([] {
    std::remove((*base_dir + "/ca.crt").c_str());
    std::remove(base_dir->c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  if (!FileRefsAreSafe(text)) return -1;  // not added to the corpus
  for (const std::string& context : {std::string(), std::string("dev")}) {
    absl::StatusOr<kube::ApiConfig> config = kube::ParseKubeconfig(text, *base_dir, context);
    if (!config.ok()) {
      FUZZ_CHECK(config.status().code() == absl::StatusCode::kInvalidArgument,
                 config.status().ToString());
      continue;
    }
    FUZZ_CHECK(!config->host.empty(), "empty host");
    FUZZ_CHECK(config->port > 0 && config->port <= 65535, "port");
    FUZZ_CHECK(config->client_cert_pem.empty() == config->client_key_pem.empty(), "cert/key");
  }
  return 0;
}
