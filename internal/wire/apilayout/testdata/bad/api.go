package bad

type service struct{}

type table struct{}

func (table) register(key any, min, max int, h any) {}

var apis table

func init() {
	apis.register(keys.A, 0, 1, (*service).handleA)
	apis.register(keys.B, 0, 1, (*service).handleB)
}

func (s *service) handleA() {}

func (s *service) handleC() {}
