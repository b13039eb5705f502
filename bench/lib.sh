# Shared by the benchmark scripts (sourced, not run).
# make_kappa_presets DIR: 100 model variants (m1..m100) and 100 system variants (s1..s100) in a
# preset folder, for κ matrices of up to 10,000 points.
make_kappa_presets() {
  mkdir -p "$1/models" "$1/systems"
  for i in $(seq 1 100); do
    printf 'preset: llama-3.1-70b\nname: m%d\nnum_layers: {value: %d, assumption: "bench"}\n' "$i" $((i % 80 + 1)) \
      > "$1/models/m$i.yaml"
    printf 'preset: h100\nname: s%d\ngpu: {preset: h100-sxm5, hbm_bandwidth: {value: %d TB/s, assumption: "bench"}}\n' "$i" "$i" \
      > "$1/systems/s$i.yaml"
  done
}
