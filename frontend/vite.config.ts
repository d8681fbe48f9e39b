import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// Built into dist/ and served by Django: index.html at / (and every client route), the hashed assets
// through WhiteNoise under /static/ (STATICFILES_DIRS includes frontend/dist).
export default defineConfig({
  base: "/static/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 600,
    // xterm is imported only by the lazily loaded Terminal tab, so it stays out of the initial bundle.
  },
});
