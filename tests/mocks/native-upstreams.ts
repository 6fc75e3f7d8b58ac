// One mock of each provider wire format that is not Claude's, Gemini's, Azure's, Bedrock's or Vertex's,
// started together for the tests that go through many channel types.
import { startCompatUpstream } from "./openai-compatible-upstream.ts";
import { startBaiduUpstream } from "./baidu-upstream.ts";
import { startZhipuUpstream } from "./zhipu-upstream.ts";
import { startSparkUpstream } from "./spark-upstream.ts";
import { startAiproxyUpstream } from "./aiproxy-upstream.ts";
import { startTencentUpstream } from "./tencent-upstream.ts";
import { startCohereUpstream } from "./cohere-upstream.ts";
import { startDifyUpstream } from "./dify-upstream.ts";
import { startDashscopeUpstream } from "./dashscope-upstream.ts";

export function startNativeUpstreams() {
  return {
    compat: startCompatUpstream(),
    baidu: startBaiduUpstream(),
    zhipu: startZhipuUpstream(),
    spark: startSparkUpstream(),
    aiproxy: startAiproxyUpstream(),
    tencent: startTencentUpstream(),
    cohere: startCohereUpstream(),
    dify: startDifyUpstream(),
    dashscope: startDashscopeUpstream(),
  };
}
