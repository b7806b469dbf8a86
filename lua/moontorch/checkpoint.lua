-- moontorch.checkpoint, the public name of io/checkpoint.lua (tensors by name in safetensors files)
return require 'moontorch.io.checkpoint'
