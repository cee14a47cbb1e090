// Reads the library's citations as their consumers do (citation_test.go):
// ajv validates each CSL-JSON against the official CSL data schema, and
// citation-js parses each BibTeX entry and each CSL-JSON and renders an
// APA bibliography entry from each.
//
// node citation.mjs CASES SCHEMA: CASES is a JSON file of
// [{id, bibtex, csl}], SCHEMA the path of csl-data.json. Prints JSON:
// {schemaRefusesBad, cases: [{id, cslErrors, fromBibtex, fromCSL}]},
// where fromX is {items (CSL data as citation-js read it), apa} or
// {error}.
import { readFileSync } from 'node:fs'
import AjvModule from 'ajv'
import { Cite } from '@citation-js/core'
import '@citation-js/plugin-bibtex'
import '@citation-js/plugin-csl'

const [casesPath, schemaPath] = process.argv.slice(2)
const cases = JSON.parse(readFileSync(casesPath, 'utf8'))
const schema = JSON.parse(readFileSync(schemaPath, 'utf8'))

const Ajv = AjvModule.default ?? AjvModule
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema)

// read parses input with citation-js (it detects BibTeX text and CSL-JSON
// alike) and renders APA as plain text.
async function read (input) {
  try {
    const cite = await Cite.async(input)
    const items = cite.data.map(({ _graph, ...item }) => item)
    const apa = cite.format('bibliography', { format: 'text', template: 'apa', lang: 'en-US' })
    return { items, apa }
  } catch (e) {
    return { error: String(e && e.stack || e) }
  }
}

const out = {
  // The schema must refuse what is not CSL-JSON, else a pass says nothing.
  schemaRefusesBad: !validate([{ id: 'IL-0001', type: 'postmortem', issued: '2019' }]),
  cases: []
}
for (const c of cases) {
  let csl
  try {
    csl = JSON.parse(c.csl)
  } catch (e) {
    out.cases.push({ id: c.id, cslErrors: ['not JSON: ' + e.message] })
    continue
  }
  const valid = validate(csl)
  out.cases.push({
    id: c.id,
    cslErrors: valid ? [] : validate.errors.map(e => `${e.instancePath} ${e.message}`),
    fromBibtex: await read(c.bibtex),
    fromCSL: await read(csl)
  })
}
process.stdout.write(JSON.stringify(out))
