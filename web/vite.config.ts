import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// base "./" keeps the app working under a path prefix; assets/ names are
// content-hashed, which is what lets the Go server cache them forever.
export default defineConfig({
  base: "/",
  plugins: [react()],
  build: { outDir: "dist", assetsDir: "assets", sourcemap: false, chunkSizeWarningLimit: 1500 },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
