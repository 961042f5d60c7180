package main

import (
	"encoding/json"
	"fmt"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
)

// crdDefaults applies the defaults of the release's CRDs (their OpenAPI schemas' `default`
// values) to Kueue objects, as the API server does on every create: the in-memory client
// has no API server, and Kueue's code relies on fields the schema fills in (a ClusterQueue's
// flavorFungibility, queueingStrategy, preemption; a Workload's pod set counts...).
type crdDefaults map[schema.GroupVersionKind]*structuralschema.Structural

func loadCRDDefaults(raws []json.RawMessage) (crdDefaults, error) {
	out := crdDefaults{}
	for i, raw := range raws {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(raw, &crd); err != nil {
			return nil, fmt.Errorf("crd %d: %w", i, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return nil, fmt.Errorf("crd %s %s: %w", crd.Name, v.Name, err)
			}
			s, err := structuralschema.NewStructural(&internal)
			if err != nil {
				return nil, fmt.Errorf("crd %s %s: %w", crd.Name, v.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			out[gvk] = s
		}
	}
	return out, nil
}

// apply fills obj's defaults in place, if its kind has a schema.
func (d crdDefaults) apply(scheme *runtime.Scheme, obj ctrl.Object) error {
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil
	}
	s, ok := d[gvks[0]]
	if !ok {
		return nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	defaulting.Default(u, s)
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}
