// Test support, part of the kube-apiserver emulation (fake_apiserver.h): the pods/binding
// subresource. POST /api/v1/namespaces/NS/pods/NAME/binding sets spec.nodeName, copies the
// Binding's metadata.annotations onto the pod and sets PodScheduled=True, answering 201 with a
// Status; a pod already assigned, being deleted or scheduling-gated is 409, a wrong uid
// precondition 409, a missing target 422, as kube-apiserver answers (binding-*.txt captures).
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_BINDING_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_BINDING_H_

#include "absl/strings/string_view.h"
#include "test/support/apiserver_status.h"
#include "test/support/apiserver_store.h"

namespace testing_support::apiserver {

// `body` is the Binding as sent. The pod's change is one MODIFIED event.
Reply Bind(ObjectStore& store, absl::string_view ns, absl::string_view name,
           absl::string_view body);

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_BINDING_H_
