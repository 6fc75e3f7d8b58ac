// Browser entry. The React 19 adapter must load before any Arco component renders (STACK.md §1b).
import "@arco-design/web-react/es/_util/react-19-adapter";
import "./preload.ts";
// The build answers this with the styles of the Arco components the console uses (scripts/arco-imports.ts).
import "@arco-design/web-react/dist/css/arco.css";
import "./styles.css";
// Every stylesheet is imported here: the CSS of a lazily loaded page would never be loaded.
import React from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter } from "react-router-dom";
import "./i18n/index.ts";
import App from "./App.tsx";

createRoot(document.getElementById("root")!).render(
  <React.StrictMode>
    <BrowserRouter>
      <App />
    </BrowserRouter>
  </React.StrictMode>,
);
