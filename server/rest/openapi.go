package rest

import _ "embed"

// openAPI is the API's OpenAPI 3 document, served at Prefix+"/openapi.json". Its paths are
// exactly routes() (TestOpenAPIMatchesRoutes).
//
//go:embed openapi.json
var openAPI []byte
