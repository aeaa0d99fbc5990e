# The example models (examples/) and their cells: examples/CMakeLists.txt
# exports and compiles them, test/CMakeLists.txt builds tests on them (and
# needs the cells to depend on the ONNX files, not just the targets).
set(CELL_EXAMPLE_MODELS lstm gru seq2seq treelstm stacked lnlstm attention
                        bahdanau mingru mamba rwkv slstm)
set(cells_lstm lstm)
set(cells_gru gru)
set(cells_seq2seq encoder decoder)
set(cells_treelstm leaf internal)
set(cells_stacked stacked)
set(cells_lnlstm lnlstm)
set(cells_attention encoder decoder)
set(cells_bahdanau encoder decoder)
set(cells_mingru mingru)
set(cells_mamba mamba)
set(cells_rwkv rwkv)
set(cells_slstm slstm)
