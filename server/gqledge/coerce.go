package gqledge

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Input coercion of variable values for the built-in scalars, as the
// GraphQL specification has it (section 3.5), before gqlgen's own
// coercion (gqlparser's validator.VariableValues) sees them. That one
// takes a string of digits for an Int ("5"), takes any 64-bit integer for
// an Int (the specification's Int is 32-bit), does not look at numbers
// nested in lists and input objects, and words the refusal of 1.5 as
// "cannot use value 0 as Int". Here each value of a built-in scalar type,
// at any depth, is checked and replaced by its coerced Go value (int64
// for Int, float64 for Float), which gqlgen's coercion and its
// graphql.UnmarshalInt then take as they are. Enums, custom scalars and
// the shape of input objects are left to gqlgen.

// maxShownValue bounds how much of a refused value a message quotes.
const maxShownValue = 40

// coerceVariables coerces the variables of the operation opName of doc
// in place. A variable whose type the schema does not know is left to the
// validator.
func coerceVariables(schema *ast.Schema, doc *ast.QueryDocument, opName string, vars map[string]any) *gqlerror.Error {
	if len(vars) == 0 || schema == nil || doc == nil {
		return nil
	}
	op := doc.Operations.ForName(opName)
	if op == nil {
		return nil
	}
	for _, def := range op.VariableDefinitions {
		v, ok := vars[def.Variable]
		if !ok || def.Type == nil {
			continue
		}
		path := ast.Path{ast.PathName("variable"), ast.PathName(def.Variable)}
		c, err := coerceValue(schema, def.Type, v, "$"+def.Variable, path, 0)
		if err != nil {
			return err
		}
		vars[def.Variable] = c
	}
	return nil
}

func coerceValue(schema *ast.Schema, typ *ast.Type, v any, name string, path ast.Path, depth int) (any, *gqlerror.Error) {
	if v == nil || depth > maxRequestNesting {
		return v, nil // null: gqlgen checks non-null types
	}
	if typ.Elem != nil {
		list, ok := v.([]any)
		if !ok { // a single value stands for a list of one
			return coerceValue(schema, typ.Elem, v, name, path, depth+1)
		}
		for i, e := range list {
			c, err := coerceValue(schema, typ.Elem, e, name, append(path, ast.PathIndex(i)), depth+1)
			if err != nil {
				return nil, err
			}
			list[i] = c
		}
		return list, nil
	}
	def := schema.Types[typ.NamedType]
	if def == nil {
		return v, nil
	}
	switch def.Kind {
	case ast.Scalar:
		return coerceScalar(def.Name, v, name, path)
	case ast.InputObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return v, nil // gqlgen refuses it
		}
		for _, f := range def.Fields {
			fv, ok := obj[f.Name]
			if !ok {
				continue
			}
			c, err := coerceValue(schema, f.Type, fv, name+"."+f.Name, append(path, ast.PathName(f.Name)), depth+1)
			if err != nil {
				return nil, err
			}
			obj[f.Name] = c
		}
	}
	return v, nil
}

func coerceScalar(typ string, v any, name string, path ast.Path) (any, *gqlerror.Error) {
	switch typ {
	case "Int":
		if n, ok := v.(json.Number); ok {
			if i, err := strconv.ParseInt(string(n), 10, 32); err == nil {
				return i, nil
			}
			f, err := strconv.ParseFloat(string(n), 64)
			switch {
			case err == nil && f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32:
				return int64(f), nil // 1e2, 5.0: whole numbers
			case err != nil || f == math.Trunc(f):
				return nil, coercionError(path, name, v, "Int cannot represent a non 32-bit signed integer value")
			}
			return nil, coercionError(path, name, v, "Int cannot represent a non-integer value")
		}
		return nil, coercionError(path, name, v, "Int cannot represent "+kindOf(v))
	case "Float":
		if n, ok := v.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err == nil && !math.IsInf(f, 0) {
				return f, nil
			}
			return nil, coercionError(path, name, v, "Float cannot represent a value that does not fit in a double")
		}
		return nil, coercionError(path, name, v, "Float cannot represent "+kindOf(v))
	case "String":
		if _, ok := v.(string); !ok {
			return nil, coercionError(path, name, v, "String cannot represent "+kindOf(v))
		}
	case "Boolean":
		if _, ok := v.(bool); !ok {
			return nil, coercionError(path, name, v, "Boolean cannot represent "+kindOf(v))
		}
	case "ID":
		switch v := v.(type) {
		case string:
		case json.Number:
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				return nil, coercionError(path, name, v, "ID cannot represent a number that is not a whole 64-bit integer")
			}
		default:
			return nil, coercionError(path, name, v, "ID cannot represent "+kindOf(v))
		}
	}
	return v, nil
}

// kindOf names a decoded JSON value's kind.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return "this value"
}

// coercionError is a request error (no data) naming the variable and the
// value it was given, as JSON, shortened.
func coercionError(path ast.Path, name string, v any, why string) *gqlerror.Error {
	shown := "a value"
	if b, err := json.Marshal(v); err == nil {
		shown = string(b)
		if len(shown) > maxShownValue {
			shown = strings.ToValidUTF8(shown[:maxShownValue], "") + "…"
		}
	}
	err := gqlerror.ErrorPathf(path, "variable %s got invalid value %s: %s", name, shown, why)
	errcode.Set(err, errcode.ValidationFailed)
	return err
}
