// Package kubernetes holds snowfence's Kubernetes manifests (plain YAML
// with kustomizations: base/ and one overlay per lease store under
// overlays/) and their test, which renders every overlay with kustomize's
// own engine (the one kubectl apply -k runs), decodes every object into the
// Kubernetes API types (k8s.io/api, and the Prometheus Operator's for the
// ServiceMonitor and the PrometheusRule) refusing unknown and duplicate
// fields, and holds the holders' Deployment to the image (package
// deploy/image), to the routes of the server (api/openapi.json, which the
// server's own tests hold to its route table) and to the drain it runs.
// There is no Go code to use here; docs/deployment.md says what to set.
package kubernetes
