// SPDX-License-Identifier: Apache-2.0
// Evaluate a ValidatingAdmissionPolicy's CEL on sample requests, as the API
// server would: the matchConditions (one false: the policy does not apply,
// allowed), the variables in order (each sees the ones before it as
// variables.<name>), then every validation; a false one denies, with its
// messageExpression (else message). Reads {"module": <path of the CEL
// evaluator's entry file>, "spec": <policy spec>, "cases": [{"name",
// "object", "oldObject", "namespaceObject", "request"}]} on stdin (oldObject
// and request optional), writes one result per case: {"name", "allowed",
// "message", "error"}.
import {readFileSync} from 'node:fs'
import {pathToFileURL} from 'node:url'

const input = JSON.parse(readFileSync(0, 'utf8'))
const {evaluate} = await import(pathToFileURL(input.module).href)

function run (c, spec) {
  const ctx = {
    object: c.object ?? null,
    oldObject: c.oldObject ?? null,
    namespaceObject: c.namespaceObject ?? null,
    request: c.request ?? {},
    variables: {}
  }
  for (const m of spec.matchConditions || []) {
    const applies = evaluate(m.expression, ctx)
    if (typeof applies !== 'boolean') throw new Error(`matchCondition "${m.name}" gave no bool`)
    if (!applies) return {allowed: true, message: ''}
  }
  for (const v of spec.variables || []) {
    ctx.variables[v.name] = evaluate(v.expression, ctx)
  }
  for (const rule of spec.validations) {
    const ok = evaluate(rule.expression, ctx)
    if (typeof ok !== 'boolean') {
      throw new Error(`validation "${rule.expression}" gave ${typeof ok}, not a bool`)
    }
    if (!ok) {
      const message = rule.messageExpression ? evaluate(rule.messageExpression, ctx) : rule.message
      if (typeof message !== 'string') throw new Error('messageExpression gave no string')
      return {allowed: false, message}
    }
  }
  return {allowed: true, message: ''}
}

const results = input.cases.map((c) => {
  try {
    return {name: c.name, error: null, ...run(c, input.spec)}
  } catch (e) {
    return {name: c.name, allowed: null, message: '', error: String(e && e.message ? e.message : e)}
  }
})
process.stdout.write(JSON.stringify(results) + '\n')
