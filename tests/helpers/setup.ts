// Second preload: after the DOM exists. Arco's React 19 adapter from lib/ (bun test resolves "main").
import "@arco-design/web-react/lib/_util/react-19-adapter";
