// Runs one real GenAI instrumentation library against a scripted
// OpenAI-compatible stub and exports with the real OTLP exporters to the
// receiver that e2e/otlp_sdk_test.go started. Usage:
//
//   CRITIC_OTLP=http://127.0.0.1:PORT CRITIC_KEY=ck_... node run.cjs SCENARIO
//
// Every scenario runs the same two-call agent loop: the model asks for
// get_weather, the tool answers, the model answers in text. It prints one
// JSON line {"scenario", "trace_ids"} naming the OTel trace ids it exported,
// so the Go side can compare the stored steps with the conversation.
'use strict';

const http = require('node:http');

const SYSTEM = 'You are a weather agent. Use get_weather.';
const ARGS = '{"city":"Paris"}';
// Key order is deliberate (not sorted): the stored tool step must keep it.
const RESULT = '{"temp_c":21,"sky":"clear","city":"Paris"}';
const ANSWER = 'It is 21°C and clear in Paris.';
const CALL_ID = 'call_weather_1';
const MODEL = 'gpt-4o-mini';

const scenario = process.argv[2];
const base = process.env.CRITIC_OTLP;
const key = process.env.CRITIC_KEY;
if (!scenario || !base || !key) {
  console.error('usage: CRITIC_OTLP=... CRITIC_KEY=... node run.cjs SCENARIO');
  process.exit(2);
}
const question = `What is the weather in Paris? (${scenario})`;

// --- the scripted model -----------------------------------------------------

function usage(chat) {
  return chat
    ? { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60, prompt_tokens_details: { cached_tokens: 0 } }
    : { input_tokens: 50, output_tokens: 10, total_tokens: 60,
        input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } };
}

function chatReply(body) {
  const answered = (body.messages || []).some((m) => m.role === 'tool');
  const message = answered
    ? { role: 'assistant', content: ANSWER, refusal: null }
    : { role: 'assistant', content: null, refusal: null, tool_calls: [
        { id: CALL_ID, type: 'function', function: { name: 'get_weather', arguments: ARGS } }] };
  return {
    id: answered ? 'chatcmpl-2' : 'chatcmpl-1', object: 'chat.completion', created: Math.floor(Date.now() / 1000),
    model: MODEL, system_fingerprint: 'fp_stub',
    choices: [{ index: 0, message, logprobs: null, finish_reason: answered ? 'stop' : 'tool_calls' }],
    usage: usage(true),
  };
}

function responsesReply(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  const answered = input.some((i) => i && i.type === 'function_call_output');
  const output = answered
    ? [{ type: 'message', id: 'msg_2', role: 'assistant', status: 'completed',
        content: [{ type: 'output_text', text: ANSWER, annotations: [], logprobs: [] }] }]
    : [{ type: 'function_call', id: 'fc_1', call_id: CALL_ID, name: 'get_weather', arguments: ARGS, status: 'completed' }];
  return {
    id: answered ? 'resp_2' : 'resp_1', object: 'response', created_at: Math.floor(Date.now() / 1000),
    status: 'completed', model: MODEL, output, output_text: answered ? ANSWER : '',
    parallel_tool_calls: true, tool_choice: 'auto', tools: body.tools || [], temperature: 1, top_p: 1,
    instructions: body.instructions ?? null, error: null, incomplete_details: null, metadata: {},
    text: { format: { type: 'text' } }, truncation: 'disabled', usage: usage(false),
  };
}

function startStub() {
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      let body = {};
      try { body = JSON.parse(raw || '{}'); } catch { /* answered below */ }
      let out;
      if (req.url.endsWith('/chat/completions')) out = chatReply(body);
      else if (req.url.endsWith('/responses')) out = responsesReply(body);
      if (!out || body.stream) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `stub: no ${req.method} ${req.url} (stream=${!!body.stream})` } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// --- the agent loops ---------------------------------------------------------

const TOOL_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };

async function chatLoop(client) {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: TOOL_SCHEMA } }];
  const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: question }];
  const first = await client.chat.completions.create({ model: MODEL, messages, tools });
  const call = first.choices[0].message.tool_calls[0];
  messages.push(first.choices[0].message);
  messages.push({ role: 'tool', tool_call_id: call.id, content: RESULT });
  const second = await client.chat.completions.create({ model: MODEL, messages, tools });
  if (second.choices[0].message.content !== ANSWER) throw new Error('unexpected answer');
}

async function responsesLoop(client) {
  const tools = [{ type: 'function', name: 'get_weather', description: 'Current weather of a city', parameters: TOOL_SCHEMA, strict: true }];
  const input = [{ role: 'user', content: question }];
  const first = await client.responses.create({ model: MODEL, instructions: SYSTEM, input, tools });
  const call = first.output.find((o) => o.type === 'function_call');
  input.push(call);
  input.push({ type: 'function_call_output', call_id: call.call_id, output: RESULT });
  const second = await client.responses.create({ model: MODEL, instructions: SYSTEM, input, tools });
  if (second.output_text !== ANSWER) throw new Error(`unexpected answer ${JSON.stringify(second.output)}`);
}

// --- OpenTelemetry set-up -----------------------------------------------------

function otel({ json, simple, logs }) {
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const { resourceFromAttributes } = require('@opentelemetry/resources');
  const headers = { Authorization: `Bearer ${key}` };
  const Exporter = json
    ? require('@opentelemetry/exporter-trace-otlp-http').OTLPTraceExporter
    : require('@opentelemetry/exporter-trace-otlp-proto').OTLPTraceExporter;
  const exporter = new Exporter({ url: `${base}/api/v1/rm/otel/v1/traces`, headers });
  const Processor = simple ? SimpleSpanProcessor : BatchSpanProcessor;
  const resource = resourceFromAttributes({ 'service.name': `weather-${scenario}` });
  const ids = new Set();
  // Records every exported trace id: what the Go side looks up.
  const recorder = { onStart() {}, onEnd(span) { ids.add(span.spanContext().traceId); }, forceFlush: async () => {}, shutdown: async () => {} };
  const provider = new NodeTracerProvider({ resource, spanProcessors: [recorder, new Processor(exporter)] });
  provider.register();
  let loggerProvider;
  if (logs) {
    const { LoggerProvider, SimpleLogRecordProcessor, BatchLogRecordProcessor } = require('@opentelemetry/sdk-logs');
    const LogExporter = json
      ? require('@opentelemetry/exporter-logs-otlp-http').OTLPLogExporter
      : require('@opentelemetry/exporter-logs-otlp-proto').OTLPLogExporter;
    const logExporter = new LogExporter({ url: `${base}/api/v1/rm/otel/v1/logs`, headers });
    const LogProcessor = simple ? SimpleLogRecordProcessor : BatchLogRecordProcessor;
    loggerProvider = new LoggerProvider({ resource, processors: [new LogProcessor({ exporter: logExporter })] });
    require('@opentelemetry/api-logs').logs.setGlobalLoggerProvider(loggerProvider);
  }
  return {
    provider, loggerProvider, ids,
    async shutdown() {
      await provider.forceFlush();
      await provider.shutdown();
      if (loggerProvider) { await loggerProvider.forceFlush(); await loggerProvider.shutdown(); }
    },
  };
}

// inRoot runs fn inside an agent span, so the LLM calls share one trace.
async function inRoot(fn) {
  const api = require('@opentelemetry/api');
  const tracer = api.trace.getTracer('weather-agent');
  return tracer.startActiveSpan('weather-agent', async (span) => {
    try { return await fn(); } finally { span.end(); }
  });
}

function openaiClient(stubURL) {
  const OpenAI = require('openai');
  return new OpenAI({ apiKey: 'sk-stub', baseURL: `${stubURL}/v1`, maxRetries: 0 });
}

const scenarios = {
  // The OpenTelemetry project's GenAI instrumentation: content only in log
  // records (chat: one record per message; Responses: operation.details).
  async 'otel-chat-proto-simple'(stub) {
    process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = 'true';
    const o = otel({ json: false, simple: true, logs: true });
    const { registerInstrumentations } = require('@opentelemetry/instrumentation');
    const { OpenAIInstrumentation } = require('@opentelemetry/instrumentation-openai');
    registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
    await inRoot(() => chatLoop(openaiClient(stub)));
    return o;
  },
  async 'otel-responses-json-batch'(stub) {
    process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = 'true';
    const o = otel({ json: true, simple: false, logs: true });
    const { registerInstrumentations } = require('@opentelemetry/instrumentation');
    const { OpenAIInstrumentation } = require('@opentelemetry/instrumentation-openai');
    registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
    await inRoot(() => responsesLoop(openaiClient(stub)));
    return o;
  },
  // OpenInference, as its quick-start: client instrumentation only, no root
  // span, so every LLM call is its own OTel trace re-sending the history.
  async 'openinference-chat-json-batch'(stub) {
    const o = otel({ json: true, simple: false });
    const { registerInstrumentations } = require('@opentelemetry/instrumentation');
    const { OpenAIInstrumentation } = require('@arizeai/openinference-instrumentation-openai');
    registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
    await chatLoop(openaiClient(stub));
    return o;
  },
  async 'openinference-responses-proto-simple'(stub) {
    const o = otel({ json: false, simple: true });
    const { registerInstrumentations } = require('@opentelemetry/instrumentation');
    const { OpenAIInstrumentation } = require('@arizeai/openinference-instrumentation-openai');
    registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
    await inRoot(() => responsesLoop(openaiClient(stub)));
    return o;
  },
  // OpenLLMetry's instrumentation, also without a root span.
  async 'openllmetry-chat-proto-batch'(stub) {
    const o = otel({ json: false, simple: false });
    const { registerInstrumentations } = require('@opentelemetry/instrumentation');
    const { OpenAIInstrumentation } = require('@traceloop/instrumentation-openai');
    registerInstrumentations({ instrumentations: [new OpenAIInstrumentation({ traceContent: true })] });
    await chatLoop(openaiClient(stub));
    return o;
  },
  // The Vercel AI SDK's own telemetry (experimental_telemetry) over its
  // OpenAI provider, chat and Responses models.
  async 'vercel-chat-json-simple'(stub) {
    const o = otel({ json: true, simple: true });
    await vercelLoop(stub, (p) => p.chat(MODEL));
    return o;
  },
  async 'vercel-responses-proto-batch'(stub) {
    const o = otel({ json: false, simple: false });
    await vercelLoop(stub, (p) => p.responses(MODEL));
    return o;
  },
  // Langfuse's OTel SDK: its span processor posts to Langfuse's own path
  // with the key as Basic auth's password; the app records observations.
  async 'langfuse-chat'(stub) {
    const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
    const { LangfuseSpanProcessor } = require('@langfuse/otel');
    const { startActiveObservation, startObservation } = require('@langfuse/tracing');
    const ids = new Set();
    const recorder = { onStart() {}, onEnd(span) { ids.add(span.spanContext().traceId); }, forceFlush: async () => {}, shutdown: async () => {} };
    const lf = new LangfuseSpanProcessor({ publicKey: 'pk-lf-critic', secretKey: key, baseUrl: base, exportMode: 'immediate' });
    const provider = new NodeTracerProvider({ spanProcessors: [recorder, lf] });
    provider.register();
    const client = openaiClient(stub);
    await startActiveObservation('weather-agent', async (agent) => {
      agent.update({ input: question });
      const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: TOOL_SCHEMA } }];
      const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: question }];
      for (let turn = 0; turn < 2; turn++) {
        const gen = startObservation('chat', { model: MODEL, input: messages.slice() }, { asType: 'generation' });
        const r = await client.chat.completions.create({ model: MODEL, messages, tools });
        const msg = r.choices[0].message;
        gen.update({ output: msg, usageDetails: { input: r.usage.prompt_tokens, output: r.usage.completion_tokens, total: r.usage.total_tokens } }).end();
        messages.push(msg);
        if (!msg.tool_calls) break;
        const tool = startObservation('get_weather', { input: JSON.parse(msg.tool_calls[0].function.arguments) }, { asType: 'tool' });
        tool.update({ output: JSON.parse(RESULT) }).end();
        messages.push({ role: 'tool', tool_call_id: msg.tool_calls[0].id, content: RESULT });
      }
      agent.update({ output: ANSWER });
    });
    return { ids, async shutdown() { await provider.forceFlush(); await provider.shutdown(); } };
  },
  // The OpenAI Agents SDK bridged to OTel by OpenInference's processor.
  async 'agents-responses-proto-batch'(stub) {
    const o = otel({ json: false, simple: false });
    const agents = require('@openai/agents');
    const { OpenAIAgentsInstrumentation } = require('@arizeai/openinference-instrumentation-openai-agents');
    const inst = new OpenAIAgentsInstrumentation({ tracerProvider: o.provider });
    inst.manuallyInstrument(agents);
    const { z } = require('zod');
    // The SDK's own OpenAI client (its pinned major) reads these.
    process.env.OPENAI_BASE_URL = `${stub}/v1`;
    process.env.OPENAI_API_KEY = 'sk-stub';
    agents.setOpenAIAPI('responses');
    const getWeather = agents.tool({
      name: 'get_weather', description: 'Current weather of a city',
      parameters: z.object({ city: z.string() }),
      execute: async () => RESULT,
    });
    const agent = new agents.Agent({ name: 'weather-agent', instructions: SYSTEM, model: MODEL, tools: [getWeather] });
    const result = await agents.run(agent, question);
    if (result.finalOutput !== ANSWER) throw new Error(`unexpected answer ${result.finalOutput}`);
    await agents.getGlobalTraceProvider().forceFlush();
    return o;
  },
};

async function vercelLoop(stub, model) {
  const { generateText, tool, stepCountIs, jsonSchema, registerTelemetry } = require('ai');
  const { OpenTelemetry } = require('@ai-sdk/otel');
  registerTelemetry(new OpenTelemetry());
  const { createOpenAI } = require('@ai-sdk/openai');
  const provider = createOpenAI({ apiKey: 'sk-stub', baseURL: `${stub}/v1` });
  const r = await generateText({
    model: model(provider),
    system: SYSTEM,
    prompt: question,
    tools: { get_weather: tool({ description: 'Current weather of a city', inputSchema: jsonSchema(TOOL_SCHEMA), execute: async () => JSON.parse(RESULT) }) },
    stopWhen: stepCountIs(3),
    experimental_telemetry: { isEnabled: true, functionId: 'weather-agent' },
  });
  if (r.text !== ANSWER) throw new Error(`unexpected answer ${r.text}`);
}

(async () => {
  const run = scenarios[scenario];
  if (!run) {
    console.error(`unknown scenario ${scenario}; known: ${Object.keys(scenarios).join(', ')}`);
    process.exit(2);
  }
  const stub = await startStub();
  const stubURL = `http://127.0.0.1:${stub.address().port}`;
  const o = await run(stubURL);
  await o.shutdown();
  stub.close();
  console.log(JSON.stringify({ scenario, trace_ids: [...o.ids] }));
})().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
