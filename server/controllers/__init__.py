"""Built-in controllers: work kube-controller-manager would do that a stand-in API server must do itself."""
